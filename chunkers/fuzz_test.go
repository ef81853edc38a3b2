package chunkers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzChunkers runs every strategy (embedding ones with the hashed bag-of-words embedder)
// on arbitrary text, sizes and overlaps: valid UTF-8 must give chunks with all properties,
// invalid UTF-8 an InvalidUTF8Error at the right offset, and nothing may hang or panic.
// Seed corpus: testdata/fuzz/FuzzChunkers.
func FuzzChunkers(f *testing.F) {
	f.Add("Dr. Pablo went home. He slept.\n\nNew paragraph", uint8(5), uint8(1))
	f.Add("# H\n```\n# c\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n1.2 Scope\nArtikel 3", uint8(4), uint8(3))
	f.Add("👨\u200d👩\u200d👧🇳🇱漢字。！？ x", uint8(2), uint8(1))
	f.Add("\xff\xfe abc", uint8(3), uint8(0))
	f.Fuzz(func(t *testing.T, text string, size, overlap uint8) {
		n := int(size%64) + 1
		o := int(overlap) % n
		if utf8.ValidString(text) {
			g, _ := NewSentenceSegmenter(nil)
			if fast, ref := g.cut(text, 0, len(text), nil), g.cutUniseg(text, 0, len(text), nil); !slices.Equal(fast, ref) {
				t.Fatalf("windowed sentence cuts %v differ from uniseg %v", fast, ref)
			}
		}
		sizers := []Sizer{RuneSizer{}, WordSizer{}}
		for _, sz := range sizers {
			h, _ := NewHeading(sz, n, o, HeadingOptions{Markdown: true, NumberedSections: true, Patterns: []HeadingPattern{{"^Beslispunt", 2}}})
			sem, _ := NewSemantic(sz, n, &bowEmbedder{}, SemanticOptions{Threshold: ThresholdStandardDeviation, Amount: 0.5, BufferSentences: 1})
			cc, _ := NewCluster(sz, n, &bowEmbedder{}, ClusterOptions{})
			km, _ := NewCluster(sz, n, &bowEmbedder{}, ClusterOptions{Mode: ClusterKMeans, Clusters: 3})
			all := []struct {
				c    Chunker
				opts checkOpts
			}{
				{must(NewFixed(sz, n, o)), checkOpts{ordered: true}},
				{must(NewSentence(sz, n, o, SentenceOptions{OverlapSentences: int(overlap % 3)})), checkOpts{ordered: true}},
				{must(NewParagraph(sz, n, o)), checkOpts{ordered: true}},
				{must(NewRecursive(sz, n, o, nil)), checkOpts{ordered: true}},
				{must(NewRecursive(sz, n, o, []string{"\n", ", "})), checkOpts{ordered: true}},
				{h, checkOpts{ordered: true, atomicOK: true}},
				{sem, checkOpts{ordered: true}},
				{cc, checkOpts{ordered: true}},
				{km, checkOpts{ordered: true}},
			}
			for _, s := range all {
				chunks, err := s.c.Chunk(context.Background(), text)
				if !utf8.ValidString(text) {
					var ue *InvalidUTF8Error
					if !errors.As(err, &ue) || utf8.ValidString(text[:ue.Offset]) == false || ue.Offset >= len(text) {
						t.Fatalf("%T: invalid UTF-8 gave %v", s.c, err)
					}
					r, w := utf8.DecodeRuneInString(text[ue.Offset:])
					if r != utf8.RuneError || w != 1 {
						t.Fatalf("%T: offset %d is not the invalid byte", s.c, ue.Offset)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%T: %v", s.c, err)
				}
				o := s.opts
				o.max, o.sizer = n, sz
				checkChunks(t, text, chunks, o)
				if blank(text) != (len(chunks) == 0) {
					t.Fatalf("%T: %d chunks for blank=%v text", s.c, len(chunks), blank(text))
				}
			}
		}
	})
}
