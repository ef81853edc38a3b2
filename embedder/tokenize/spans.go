package tokenize

import "github.com/ragops/ragops/chunkers"

// Spans returns the byte spans of text's tokens (special tokens excluded), so the tokenizer
// is a chunkers.SpanSizer and Fixed and SlidingWindow chunks cut at exact token positions.
func (t *Tokenizer) Spans(text string) []chunkers.Span {
	enc := t.Encode(text, false)
	out := make([]chunkers.Span, len(enc.Offsets))
	for i, o := range enc.Offsets {
		out[i] = chunkers.Span{Start: o.Start, End: o.End}
	}
	return out
}

var _ chunkers.SpanSizer = (*Tokenizer)(nil)
