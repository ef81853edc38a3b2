package markup_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// checkDocument asserts the invariants every reader's output keeps, whatever the input.
func checkDocument(t *testing.T, doc reader.Document) {
	t.Helper()
	if !utf8.ValidString(doc.Text) {
		t.Fatalf("text is not valid UTF-8: %q", doc.Text)
	}
	// Only a table whose first cell is empty may start the text with white space (a tab).
	if doc.Text != strings.TrimRight(strings.TrimLeft(doc.Text, " \n"), " \t\n") {
		t.Fatalf("text has leading or trailing space: %q", doc.Text)
	}
	prev := 0
	for i, h := range doc.Outline {
		if h.Level < 1 || h.Title == "" || h.Title != reader.CollapseSpace(h.Title) {
			t.Fatalf("heading %d %+v: bad level or title", i, h)
		}
		if h.Start < prev || h.Start > h.End || h.End > len(doc.Text) {
			t.Fatalf("heading %d %+v out of order or range (text %d bytes)", i, h, len(doc.Text))
		}
		if !strings.HasPrefix(doc.Text[h.Start:], h.Title) {
			t.Fatalf("heading %d %q not at its start: %.40q", i, h.Title, doc.Text[h.Start:])
		}
		for _, next := range doc.Outline[i+1:] {
			if next.Level <= h.Level {
				if h.End != next.Start {
					t.Fatalf("heading %d %q ends at %d, next same-level heading starts at %d", i, h.Title, h.End, next.Start)
				}
				break
			}
		}
		prev = h.Start
	}
	if len(doc.Pages) != 0 {
		t.Fatalf("pages %v from a format without pages", doc.Pages)
	}
}

func seed(f *testing.F, name string) {
	b, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// FuzzHTML feeds arbitrary bytes to the HTML reader: it must not panic, and what it
// returns must keep the Document invariants. Seeds: testdata/fuzz/FuzzHTML and the fixture.
func FuzzHTML(f *testing.F) {
	seed(f, "raadsbesluit.html")
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := markup.HTML{}.Read(context.Background(), data, reader.MediaTypeHTML)
		if err != nil {
			if _, ok := reader.ReasonOf(err); !ok {
				t.Fatalf("error is not a skip: %v", err)
			}
			return
		}
		checkDocument(t, doc)
	})
}

// FuzzMarkdown is FuzzHTML for the Markdown reader. Seeds: testdata/fuzz/FuzzMarkdown
// and the fixture.
func FuzzMarkdown(f *testing.F) {
	seed(f, "raadsbesluit.md")
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := markup.Markdown{}.Read(context.Background(), data, reader.MediaTypeMarkdown)
		if err != nil {
			if _, ok := reader.ReasonOf(err); !ok {
				t.Fatalf("error is not a skip: %v", err)
			}
			return
		}
		checkDocument(t, doc)
	})
}
