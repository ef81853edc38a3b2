// Package chunkers cuts document text into chunks: byte spans with exact offsets, token
// counts in a Sizer's unit and the heading path above them.
//
// Strategies: NewFixed, NewSlidingWindow, NewSentence, NewParagraph, NewRecursive,
// NewHeading, NewSemantic and NewCluster (package chunkers/registry builds them from a
// ChunkingStrategy spec). Every strategy keeps text[Start:End] exact, covers every
// non-whitespace byte, keeps sizes within the maximum except a flagged unsplittable unit
// (Chunk.Oversize), rejects overlap >= size, returns no chunks for blank text and an
// *InvalidUTF8Error naming the byte offset for invalid UTF-8.
//
// Tests read the BEIR data sets from $RAGOPS_DATASETS (default ../../shared/datasets from
// this folder, i.e. the shared/ folder beside the checkout). When they are missing the
// tests that need them skip, or fail when RAGOPS_REQUIRE_ALL=1 (CI).
package chunkers

import (
	"context"
	"strings"
)

// Span is a half-open byte range [Start, End) into a document's UTF-8 text.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Len returns the span's length in bytes.
func (s Span) Len() int { return s.End - s.Start }

// Chunk is one piece of a document. For every strategy but k-means clustering it is one
// span: text[Start:End] is the chunk, exactly. A k-means cluster chunk lists its sentences'
// spans in document order in Spans; Start and End then cover the first to the last span.
type Chunk struct {
	// Ordinal is the chunk's 0-based position in the document's chunk list.
	Ordinal int `json:"ordinal"`
	// Start and End are byte offsets into the document text.
	Start int `json:"start"`
	End   int `json:"end"`
	// Spans is set only for multi-span chunks (k-means clusters), in document order.
	Spans []Span `json:"spans,omitempty"`
	// TokenCount is the chunk's size in the Sizer's unit (tokens or runes).
	TokenCount int `json:"tokenCount"`
	// HeadingPath lists the section titles above the chunk, outermost first.
	HeadingPath []string `json:"headingPath,omitempty"`
	// Prefix is context that is not part of the document span but belongs in front of it
	// when the chunk is embedded: the repeated header and separator rows (ending in a
	// newline) of a Markdown table continued from the previous chunk. text[Start:End] stays
	// exact; TokenCount includes Prefix. Empty for all other chunks.
	Prefix string `json:"prefix,omitempty"`
	// PathPrefix is the heading path line that goes in front of the chunk when it is
	// embedded (naive mode), set only by the Heading strategy with HeadingOptions.PathPrefix:
	// the titles joined by " > ", ending in a newline, e.g. "Vreemdelingenwet 2000 >
	// Hoofdstuk 3 > Artikel 20\n". It is not stored with the chunk: Text leaves it out,
	// EmbedText puts it first. TokenCount includes it.
	PathPrefix string `json:"pathPrefix,omitempty"`
	// Oversize reports a chunk above the maximum size because it holds one unit that may
	// not be split: a single code point measuring more than the maximum, one Markdown
	// table row (rows are never cut), or (Fixed in tokens) one token whose text alone
	// re-tokenises to more than the maximum.
	Oversize bool `json:"oversize,omitempty"`
}

// Sizer measures text in the unit a strategy's sizes are given in: runes, words or the
// embedding model's tokens (special tokens excluded).
type Sizer interface {
	// Size returns the length of text in the sizer's unit.
	Size(text string) int
}

// Chunker cuts one document's text into chunks. Implementations are safe for concurrent use
// and deterministic: the same text always gives the same chunks.
type Chunker interface {
	// Chunk returns the chunks of text in document order with Ordinal 0..n-1. Empty or
	// whitespace-only text gives no chunks and no error; text that is not valid UTF-8 gives
	// an error naming the first invalid byte offset.
	Chunk(ctx context.Context, text string) ([]Chunk, error)
}

// Text returns what an embedder should embed for c: Prefix followed by text[Start:End], or,
// for a multi-span chunk, the spans' texts joined by a newline. text is the document the chunk
// was cut from.
func (c Chunk) Text(text string) string {
	if len(c.Spans) == 0 {
		if c.Prefix == "" {
			return text[c.Start:c.End]
		}
		return c.Prefix + text[c.Start:c.End]
	}
	var b strings.Builder
	b.WriteString(c.Prefix)
	for i, s := range c.Spans {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(text[s.Start:s.End])
	}
	return b.String()
}

// EmbedText returns what a naive embedding of c sees: PathPrefix followed by Text(text).
// text is the document the chunk was cut from.
func (c Chunk) EmbedText(text string) string {
	if c.PathPrefix == "" {
		return c.Text(text)
	}
	return c.PathPrefix + c.Text(text)
}
