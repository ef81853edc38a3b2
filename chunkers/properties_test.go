package chunkers

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// strategyCase builds one strategy for the property tests.
type strategyCase struct {
	name string
	make func(s Sizer, size, overlap int) (Chunker, error)
	opts checkOpts
}

func strategyCases() []strategyCase {
	return []strategyCase{
		{"Fixed", func(s Sizer, n, o int) (Chunker, error) { return NewFixed(s, n, o) }, checkOpts{ordered: true}},
		{"SlidingWindow", func(s Sizer, n, o int) (Chunker, error) { return NewSlidingWindow(s, n, n-o) }, checkOpts{ordered: true}},
		{"Sentence", func(s Sizer, n, o int) (Chunker, error) { return NewSentence(s, n, o, SentenceOptions{}) }, checkOpts{ordered: true}},
		{"SentenceOverlap2", func(s Sizer, n, o int) (Chunker, error) {
			return NewSentence(s, n, 0, SentenceOptions{OverlapSentences: 2})
		}, checkOpts{ordered: true}},
		{"Paragraph", func(s Sizer, n, o int) (Chunker, error) { return NewParagraph(s, n, o) }, checkOpts{ordered: true}},
		{"Recursive", func(s Sizer, n, o int) (Chunker, error) { return NewRecursive(s, n, o, nil) }, checkOpts{ordered: true}},
		{"RecursiveSeparators", func(s Sizer, n, o int) (Chunker, error) {
			return NewRecursive(s, n, o, []string{"\n\n", ". ", " "})
		}, checkOpts{ordered: true}},
	}
}

// TestPropertiesRealDocuments runs every strategy over real SciFact and QMSum documents
// with rune and word sizers and several sizes and overlaps.
func TestPropertiesRealDocuments(t *testing.T) {
	docs := append(loadDocs(t, "scifact", 60), loadDocs(t, "qmsum", 3)...)
	params := []struct{ size, overlap int }{{1, 0}, {7, 3}, {64, 0}, {300, 50}, {2000, 100}}
	sizers := []Sizer{RuneSizer{}, WordSizer{}}
	for _, sc := range strategyCases() {
		for _, sz := range sizers {
			for _, p := range params {
				c, err := sc.make(sz, p.size, p.overlap)
				if err != nil {
					t.Fatalf("%s %T %v: %v", sc.name, sz, p, err)
				}
				o := sc.opts
				o.max, o.sizer = p.size, sz
				for di, d := range docs {
					if p.size == 1 && len(d) > 20000 {
						continue // size 1 over a meeting transcript is slow and adds nothing
					}
					chunks := run(t, c, d)
					if len(chunks) == 0 {
						t.Fatalf("%s %T %v doc %d: no chunks", sc.name, sz, p, di)
					}
					checkChunks(t, d, chunks, o)
					if again := run(t, c, d); !reflect.DeepEqual(chunks, again) {
						t.Fatalf("%s %T %v doc %d: not deterministic", sc.name, sz, p, di)
					}
				}
			}
		}
	}
}

// TestEmptyAndInvalid checks empty and whitespace-only input (no chunks) and invalid UTF-8
// (an error naming the byte offset) for every strategy.
func TestEmptyAndInvalid(t *testing.T) {
	for _, sc := range strategyCases() {
		c, err := sc.make(RuneSizer{}, 10, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []string{"", " ", "\n\n\t \u00a0\u2003\n"} {
			if got := run(t, c, in); len(got) != 0 {
				t.Errorf("%s(%q) = %v, want no chunks", sc.name, in, got)
			}
		}
		_, err = c.Chunk(context.Background(), "héllo wo\xffrld")
		var ue *InvalidUTF8Error
		if !errors.As(err, &ue) || ue.Offset != 9 || !strings.Contains(err.Error(), "offset 9") {
			t.Errorf("%s: invalid UTF-8 gave %v, want an InvalidUTF8Error at offset 9", sc.name, err)
		}
	}
}

// TestParameterErrors checks that parameters that cannot make progress are rejected.
func TestParameterErrors(t *testing.T) {
	for _, sc := range strategyCases() {
		if sc.name == "SlidingWindow" || sc.name == "SentenceOverlap2" {
			continue
		}
		for _, p := range [][2]int{{10, 10}, {10, 11}, {0, 0}, {5, -1}} {
			if _, err := sc.make(RuneSizer{}, p[0], p[1]); err == nil {
				t.Errorf("%s size %d overlap %d: no error", sc.name, p[0], p[1])
			}
		}
	}
	if _, err := NewSlidingWindow(RuneSizer{}, 10, 11); err == nil || !strings.Contains(err.Error(), "stride") {
		t.Errorf("stride above window: %v", err)
	}
	if _, err := NewSlidingWindow(RuneSizer{}, 10, 0); err == nil {
		t.Error("stride 0 accepted")
	}
	_, err := NewFixed(RuneSizer{}, 10, 10)
	if err == nil || !strings.Contains(err.Error(), "overlap (10) must be less than size (10)") {
		t.Errorf("overlap == size: %v", err)
	}
}
