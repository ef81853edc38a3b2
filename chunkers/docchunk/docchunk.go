// Package docchunk chunks a read document: it hands the reader's outline to strategies that
// walk it, so a build and `ragops chunk` cut a document the same way.
package docchunk

import (
	"context"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/reader"
)

// Chunk cuts doc with c. The Heading strategy takes the outline the reader found in
// structured formats (HTML, DOCX, ODT, PDF bookmarks); other strategies, and documents
// without an outline, are chunked from their text. Spans are byte offsets into doc.Text.
func Chunk(ctx context.Context, c chunkers.Chunker, doc reader.Document) ([]chunkers.Chunk, error) {
	h, ok := c.(*chunkers.HeadingChunker)
	if !ok || len(doc.Outline) == 0 || doc.MediaType == reader.MediaTypeMarkdown || doc.MediaType == reader.MediaTypeText {
		return c.Chunk(ctx, doc.Text)
	}
	outline := make([]chunkers.OutlineEntry, len(doc.Outline))
	for i, o := range doc.Outline {
		outline[i] = chunkers.OutlineEntry{Level: o.Level, Title: o.Title, Span: chunkers.Span{Start: o.Start, End: doc.TitleEnd(i)}}
	}
	return h.ChunkOutline(ctx, doc.Text, outline)
}
