package chunkers

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// TestSentenceFastPathMatchesUniseg compares the windowed segmentation with uniseg over
// whole documents (SciFact, QMSum, Markdown, Dutch, CJK and emoji text) and 3,000 random
// strings of terminators, spaces, capitals, quotes and abbreviations.
func TestSentenceFastPathMatchesUniseg(t *testing.T) {
	docs := append(loadDocs(t, "scifact", 1000), loadDocs(t, "qmsum", 10)...)
	docs = append(docs, readTestdata(t, "goldmark-README.md"), readTestdata(t, "raadsbesluit.txt"),
		"你好。世界！再见？好\u2029Next. \"Quoted.\" (Paren.) a.b. 3.14. E.g. X. …Yes‼ No‽ ok。」「x\r\nY.\u0085Z",
		"Ends with a stop.", ". . .", "?!?! A", "x.\n\n\nY", "Mr.  \t Smith. Stop.)  ] Next")
	// Random strings of the pieces the boundary rules look at: terminators, spaces, capitals,
	// lower case, digits, quotes, brackets, abbreviations, line breaks.
	pieces := []string{".", "!", "?", " ", "  ", "\t", "A", "The", "a", "x", "3", "e.g.", "Mr.", "Fig.", "\"", "'", ")",
		"(", "“", "‘", "。", "\n", "\r\n", "…", "‼", ",", ";", "É"}
	rng := rand.New(rand.NewSource(34))
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.Intn(24) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		docs = append(docs, b.String())
	}
	g, _ := NewSentenceSegmenter([]string{"en", "nl", "de", "fr"})
	for i, d := range docs {
		fast := g.cut(d, 0, len(d), nil)
		ref := g.cutUniseg(d, 0, len(d), nil)
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("doc %d: windowed cuts differ from uniseg\nfast %v\nref  %v", i, fast, ref)
		}
	}
}
