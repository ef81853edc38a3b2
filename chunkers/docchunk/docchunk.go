// Package docchunk chunks a read document: it hands the reader's outline to strategies that
// walk it, so a build and `ragops chunk` cut a document the same way.
package docchunk

import (
	"context"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/reader"
)

// Chunk cuts doc with c; spans are byte offsets into doc.Text.
//
// The Heading strategy walks the outline the reader found, whatever the format: Markdown
// (goldmark's headings: the reader has already removed the "#" marks from the text, and
// code-block lines are never headings), HTML, DOCX, ODT, PDF (bookmarks, else font sizes)
// and BEIR records (the title, then the Markdown headings in the text). Only a document
// without an outline (plain text, a PDF with neither bookmarks nor larger fonts) is scanned
// by the strategy's own detectors (Markdown, numbered and Dutch legal sections, patterns).
// When the strategy has patterns or numbered sections, the lines they match join the
// reader's outline below the reader's headings (see Merge): a DOCX whose "Beslispunt" and
// "Artikel 2" are bold paragraphs, not heading styles, is still cut there. Other strategies
// chunk the text alone.
func Chunk(ctx context.Context, c chunkers.Chunker, doc reader.Document) ([]chunkers.Chunk, error) {
	h, ok := c.(*chunkers.HeadingChunker)
	if !ok || len(doc.Outline) == 0 {
		return c.Chunk(ctx, doc.Text)
	}
	return h.ChunkOutline(ctx, doc.Text, Merge(Outline(doc), h.LineOutline(doc.Text)))
}

// Headings returns the headings Chunk cuts doc at with c: for the Heading strategy the
// reader's outline with the strategy's line headings merged in, or, for a document without
// an outline, the headings the strategy detects in the text (numbered sections, Dutch
// decision sections, patterns, Markdown); for every other strategy the reader's outline,
// which it does not use but a Heading strategy would.
func Headings(c chunkers.Chunker, doc reader.Document) []chunkers.OutlineEntry {
	h, ok := c.(*chunkers.HeadingChunker)
	switch {
	case !ok:
		return Outline(doc)
	case len(doc.Outline) == 0:
		return h.Outline(doc.Text)
	}
	return Merge(Outline(doc), h.LineOutline(doc.Text))
}

// Merge returns the reader's outline with the detected headings added in document order;
// a detected heading on a line the reader already has is dropped. A detected heading nests
// below the innermost reader heading above it: its level becomes that heading's level plus
// its own, so the next reader heading of that level or above clears it from the path. Both
// inputs are ordered by Start.
func Merge(outline, detected []chunkers.OutlineEntry) []chunkers.OutlineEntry {
	if len(detected) == 0 {
		return outline
	}
	out := make([]chunkers.OutlineEntry, 0, len(outline)+len(detected))
	var stack []int // levels of the reader headings enclosing the current position
	i := 0
	for _, d := range detected {
		for ; i < len(outline) && outline[i].Start <= d.Start; i++ {
			for len(stack) > 0 && stack[len(stack)-1] >= outline[i].Level {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, outline[i].Level)
			out = append(out, outline[i])
		}
		if i > 0 && outline[i-1].Start == d.Start {
			continue
		}
		if len(stack) > 0 {
			d.Level += stack[len(stack)-1]
		}
		out = append(out, d)
	}
	return append(out, outline[i:]...)
}

// Outline converts doc's outline to the Heading strategy's entries: each entry spans its
// heading's own line, [Start, doc.TitleEnd(i)).
func Outline(doc reader.Document) []chunkers.OutlineEntry {
	outline := make([]chunkers.OutlineEntry, len(doc.Outline))
	for i, o := range doc.Outline {
		outline[i] = chunkers.OutlineEntry{Level: o.Level, Title: o.Title, Span: chunkers.Span{Start: o.Start, End: doc.TitleEnd(i)}}
	}
	return outline
}
