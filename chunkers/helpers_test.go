package chunkers

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode"
	"unicode/utf8"
)

// datasetDir finds the shared data sets: $RAGOPS_DATASETS, else ../../shared/datasets
// (the checkout's sibling shared/ folder).
func datasetDir(tb testing.TB) string {
	dir := os.Getenv("RAGOPS_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "datasets")
	}
	if _, err := os.Stat(filepath.Join(dir, "scifact", "corpus.jsonl")); err != nil {
		msg := "data sets not found at " + dir + " (set RAGOPS_DATASETS to the folder holding scifact/ and qmsum/)"
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return dir
}

// loadDocs reads up to n documents' "title\n\ntext" from a BEIR corpus.jsonl (n <= 0: all).
func loadDocs(tb testing.TB, name string, n int) []string {
	f, err := os.Open(filepath.Join(datasetDir(tb), name, "corpus.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var docs []string
	for sc.Scan() && (n <= 0 || len(docs) < n) {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			tb.Fatal(err)
		}
		if d.Title != "" {
			docs = append(docs, d.Title+"\n\n"+d.Text)
		} else {
			docs = append(docs, d.Text)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return docs
}

// checkOpts says what a strategy promises beyond the common properties.
type checkOpts struct {
	max       int
	sizer     Sizer
	ordered   bool // chunk starts never decrease
	unitCount bool // TokenCount need not equal Size of the text (no strategy uses this any more)
	atomicOK  bool // Oversize chunks may be whole table rows (Heading)
}

// checkChunks asserts the properties every strategy holds: exact offsets on code point
// boundaries, every non-whitespace byte covered, sizes measured by the sizer and within max
// unless flagged Oversize for an unsplittable unit, ordinals in order.
func checkChunks(tb testing.TB, text string, chunks []Chunk, o checkOpts) {
	tb.Helper()
	covered := make([]bool, len(text))
	prevStart := -1
	for i, c := range chunks {
		if c.Ordinal != i {
			tb.Fatalf("chunk %d has ordinal %d", i, c.Ordinal)
		}
		spans := c.Spans
		if len(spans) == 0 {
			spans = []Span{{c.Start, c.End}}
		} else if spans[0].Start != c.Start || spans[len(spans)-1].End != c.End {
			tb.Fatalf("chunk %d: Start/End %d..%d do not cover its spans %v", i, c.Start, c.End, spans)
		}
		for k, s := range spans {
			if s.Start < 0 || s.End > len(text) || s.Start >= s.End {
				tb.Fatalf("chunk %d: bad span %v (text %d bytes)", i, s, len(text))
			}
			if k > 0 && s.Start < spans[k-1].End {
				tb.Fatalf("chunk %d: spans out of order %v", i, spans)
			}
			if !utf8.RuneStart(text[s.Start]) || (s.End < len(text) && !utf8.RuneStart(text[s.End])) {
				tb.Fatalf("chunk %d: span %v cuts inside a code point", i, s)
			}
			for p := s.Start; p < s.End; p++ {
				covered[p] = true
			}
		}
		if o.ordered && c.Start < prevStart {
			tb.Fatalf("chunk %d starts at %d before the previous chunk's start %d", i, c.Start, prevStart)
		}
		prevStart = c.Start
		if !o.unitCount {
			if got := o.sizer.Size(c.EmbedText(text)); got != c.TokenCount {
				tb.Fatalf("chunk %d: TokenCount %d, sizer measures %d", i, c.TokenCount, got)
			}
		}
		if c.TokenCount > o.max && !c.Oversize {
			tb.Fatalf("chunk %d: size %d above max %d and not flagged: %q", i, c.TokenCount, o.max, c.Text(text))
		}
		if c.Oversize {
			if c.TokenCount <= o.max {
				tb.Fatalf("chunk %d flagged Oversize at size %d <= %d", i, c.TokenCount, o.max)
			}
			if utf8.RuneCountInString(text[c.Start:c.End]) != 1 && !o.atomicOK {
				tb.Fatalf("chunk %d: Oversize but not a single code point: %q", i, text[c.Start:c.End])
			}
		}
	}
	for p := 0; p < len(text); {
		r, w := utf8.DecodeRuneInString(text[p:])
		if !unicode.IsSpace(r) && !covered[p] {
			tb.Fatalf("byte %d (%q) is in no chunk", p, r)
		}
		p += w
	}
}

// run chunks text and fails the test on error.
func run(tb testing.TB, c Chunker, text string) []Chunk {
	tb.Helper()
	chunks, err := c.Chunk(context.Background(), text)
	if err != nil {
		tb.Fatal(err)
	}
	return chunks
}
