// Package access decides which groups may read a document: it evaluates a Corpus's
// spec.access (path globs, metadata values, the groups a document names itself) on a
// document's path and metadata (docs/metadata.md), and keys a spec so that a sync can tell
// chunks written under other rules (docs/security.md).
package access

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Key returns the access key of spec: the first 16 hex digits of SHA-256 over its JSON, so
// equal rules give equal keys; "" for nil (no access rules). Chunks store the key they were
// written under; a sync regroups the documents whose chunks hold another.
func Key(spec *ragopsv1alpha1.AccessSpec) string {
	if spec == nil {
		return ""
	}
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// Revision returns a Corpus's revision (status.revision) from the revision of its document
// list: content itself without access rules, else the first 12 hex digits of SHA-256 over
// content and Key(spec). A change of the rules is a new revision, so every Index of the
// Corpus syncs, and the sync regroups its chunks (without embedding).
func Revision(content string, spec *ragopsv1alpha1.AccessSpec) string {
	if spec == nil || content == "" {
		return content
	}
	sum := sha256.Sum256([]byte(content + "\x00" + Key(spec)))
	return hex.EncodeToString(sum[:])[:12]
}

// Groups returns the groups that may read a document at docPath (relative to the source
// root) with metadata meta (reader and source fields): the union of the groups of every rule
// that matches, sorted and without repeats, or spec.Default's when none matches (Deny:
// none; Public: [ragopsv1alpha1.PublicGroup]). nil spec gives nil.
func Groups(spec *ragopsv1alpha1.AccessSpec, docPath string, meta map[string]any) []string {
	if spec == nil {
		return nil
	}
	var out []string
	matched := false
	for _, r := range spec.Rules {
		switch {
		case r.Path != "":
			if Match(r.Path, docPath) {
				matched = true
				out = append(out, r.Groups...)
			}
		case r.Field != "":
			if slices.ContainsFunc(values(meta[r.Field], false), func(v string) bool { return slices.Contains(r.Values, v) }) {
				matched = true
				out = append(out, r.Groups...)
			}
		case r.GroupsFrom != "":
			if g := values(meta[r.GroupsFrom], true); len(g) > 0 {
				matched = true
				out = append(out, g...)
			}
		}
	}
	if !matched {
		if spec.Default == ragopsv1alpha1.AccessPublic {
			return []string{ragopsv1alpha1.PublicGroup}
		}
		return []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// values returns a metadata value as text items: a list item by item, a string whole (split
// at commas when split, items trimmed, empty ones dropped), a number or boolean as JSON
// writes it.
func values(v any, split bool) []string {
	var out []string
	add := func(s string) {
		items := []string{s}
		if split {
			items = strings.Split(s, ",")
		}
		for _, it := range items {
			if it = strings.TrimSpace(it); it != "" {
				out = append(out, it)
			}
		}
	}
	var one func(any)
	one = func(v any) {
		switch x := v.(type) {
		case nil:
		case string:
			add(x)
		case []string:
			for _, s := range x {
				add(s)
			}
		case []any:
			for _, e := range x {
				one(e)
			}
		case float64:
			add(strconv.FormatFloat(x, 'f', -1, 64))
		case int:
			add(strconv.Itoa(x))
		case int64:
			add(strconv.FormatInt(x, 10))
		case bool:
			add(strconv.FormatBool(x))
		default:
			add(fmt.Sprint(x))
		}
	}
	one(v)
	return out
}

// Match reports whether name (a slash-separated path) matches pattern: path.Match per
// segment, and a "**" segment for any number of segments (zero included). A malformed
// pattern matches nothing.
func Match(pattern, name string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegments(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
