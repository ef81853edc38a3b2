// Package chunkers cuts document text into chunks: byte spans with exact offsets, token
// counts in a Sizer's unit and the heading path above them.
package chunkers

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
}

// Sizer measures text in the unit a strategy's sizes are given in: runes, words or the
// embedding model's tokens (special tokens excluded).
type Sizer interface {
	// Size returns the length of text in the sizer's unit.
	Size(text string) int
}
