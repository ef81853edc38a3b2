package trials

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLength bounds trial, strategy and Evaluation names and label values: a DNS label
// (RFC 1123) and a label value both hold at most 63 characters.
const MaxNameLength = 63

// boundedName turns s into a DNS label of at most MaxNameLength characters: lower case, every
// run of characters other than [a-z0-9] one "-" (bge-small-en-v1.5 gives bge-small-en-v1-5), no
// "-" at either end. A longer label keeps its first 54 characters and ends with "-" and 8 hex
// digits of SHA-256(s), so names sharing a long head stay apart. (Two inputs that differ only in
// the characters replaced give one label; Expand tells such trials apart.)
func boundedName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	label := strings.TrimRight(b.String(), "-")
	if label != "" && len(label) <= MaxNameLength {
		return label
	}
	sum := sha256.Sum256([]byte(s))
	head := label
	if len(head) > MaxNameLength-9 {
		head = strings.TrimRight(head[:MaxNameLength-9], "-")
	}
	if head == "" {
		return hex.EncodeToString(sum[:])[:8]
	}
	return head + "-" + hex.EncodeToString(sum[:])[:8]
}

// Label is the value of the ragops.dev/experiment label on an Experiment's children: its name
// bounded as a label value (see Trial.Labels).
func Label(experiment string) string { return boundedName(experiment) }
