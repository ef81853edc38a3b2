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
// Other strategies chunk the text alone.
func Chunk(ctx context.Context, c chunkers.Chunker, doc reader.Document) ([]chunkers.Chunk, error) {
	h, ok := c.(*chunkers.HeadingChunker)
	if !ok || len(doc.Outline) == 0 {
		return c.Chunk(ctx, doc.Text)
	}
	return h.ChunkOutline(ctx, doc.Text, Outline(doc))
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
