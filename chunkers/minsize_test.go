package chunkers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// words returns n numbered words separated by single spaces: "w0 w1 ...".
func words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(ws, " ")
}

// TestMinSizeFixedLastWindowFull: a Fixed document's last window under minSize starts
// earlier so that it holds size units and ends at the end of the text; without minSize
// the 3-word tail stands alone.
func TestMinSizeFixedLastWindowFull(t *testing.T) {
	text := words(23)
	for _, sz := range []Sizer{WordSizer{}, RuneSizer{}} {
		size := 10
		if _, ok := sz.(RuneSizer); ok {
			size = 40
		}
		base, err := NewFixed(sz, size, 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := WithMinSize(base, size/2)
		if err != nil {
			t.Fatal(err)
		}
		plain, got := run(t, base, text), run(t, c, text)
		if last := plain[len(plain)-1]; last.TokenCount >= size/2 {
			t.Fatalf("%T: the plain cut has no short tail to merge: %+v", sz, plain)
		}
		checkChunks(t, text, got, checkOpts{max: size, sizer: sz, ordered: true})
		last := got[len(got)-1]
		if len(got) != len(plain) || last.End != len(text) || last.TokenCount < size-1 || last.Start >= plain[len(plain)-1].Start {
			t.Fatalf("%T: last window %+v %q, want about %d units ending at %d (plain cut %+v)", sz, last, last.Text(text), size, len(text), plain)
		}
		if !reflect.DeepEqual(got[:len(got)-1], plain[:len(plain)-1]) {
			t.Fatalf("%T: windows before the last changed: %+v vs %+v", sz, got, plain)
		}
	}
}

// mergeable counts the chunks under minSize that could still join a neighbour: single-span
// neighbours with the same heading path whose merged span measures at most max.
func mergeable(text string, cs []Chunk, sz Sizer, max, minSize int) int {
	n := 0
	for i := 1; i < len(cs); i++ {
		p, c := cs[i-1], cs[i]
		if p.TokenCount >= minSize && c.TokenCount >= minSize || len(p.Spans) > 0 || len(c.Spans) > 0 ||
			!reflect.DeepEqual(p.HeadingPath, c.HeadingPath) || c.End <= p.End {
			continue
		}
		m := p
		m.End = c.End
		if sz.Size(m.EmbedText(text)) <= max {
			n++
		}
	}
	return n
}

// TestMinSizeMergesShortChunks: for Sentence, Paragraph, Recursive, Semantic and Cluster
// (contiguous) over real SciFact and QMSum documents, the plain cut leaves chunks under
// minSize beside a neighbour they fit with; WithMinSize leaves none, makes fewer chunks and
// keeps every property (exact offsets, coverage, sizes re-measured within the size). Run
// with minSize 0 (WithMinSize returning the chunker itself) it fails: the short chunks stay.
func TestMinSizeMergesShortChunks(t *testing.T) {
	docs := append(loadDocs(t, "scifact", 200), loadDocs(t, "qmsum", 2)...)
	const size, minSize = 300, 120
	cases := []struct {
		name string
		make func(Sizer) (Chunker, error)
	}{
		{"Sentence", func(s Sizer) (Chunker, error) { return NewSentence(s, size, 0, SentenceOptions{}) }},
		{"Paragraph", func(s Sizer) (Chunker, error) { return NewParagraph(s, size, 0) }},
		{"Recursive", func(s Sizer) (Chunker, error) { return NewRecursive(s, size, 0, nil) }},
		{"Semantic", func(s Sizer) (Chunker, error) {
			return NewSemantic(s, size, &bowEmbedder{}, SemanticOptions{Amount: 80, BufferSentences: 1})
		}},
		{"Cluster", func(s Sizer) (Chunker, error) { return NewCluster(s, size, &bowEmbedder{}, ClusterOptions{}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sz := RuneSizer{}
			base, err := tc.make(sz)
			if err != nil {
				t.Fatal(err)
			}
			c, err := WithMinSize(base, minSize)
			if err != nil {
				t.Fatal(err)
			}
			plainN, gotN, plainSmall, gotSmall := 0, 0, 0, 0
			for di, d := range docs {
				plain, got := run(t, base, d), run(t, c, d)
				checkChunks(t, d, got, checkOpts{max: size, sizer: sz, ordered: true})
				plainN += len(plain)
				gotN += len(got)
				plainSmall += mergeable(d, plain, sz, size, minSize)
				if k := mergeable(d, got, sz, size, minSize); k > 0 {
					gotSmall += k
					if gotSmall == k {
						t.Errorf("doc %d: %d chunks under %d characters could still join a neighbour", di, k, minSize)
					}
				}
			}
			t.Logf("%d documents: %d chunks plain (%d mergeable under %d), %d with minSize", len(docs), plainN, plainSmall, minSize, gotN)
			if plainSmall == 0 {
				t.Fatalf("the plain cut has no short chunk to merge: the data no longer tests anything")
			}
			if gotSmall > 0 || gotN >= plainN {
				t.Errorf("with minSize %d: %d mergeable short chunks left, %d chunks (plain %d)", minSize, gotSmall, gotN, plainN)
			}
		})
	}
}
