package chunkers

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// fixed cuts every size units with overlap units shared by neighbours.
type fixed struct {
	sizer         Sizer
	size, overlap int
}

// NewFixed returns a chunker that cuts text into windows of size units of sizer, each
// starting size-overlap units after the previous one (chonkie's TokenChunker, LangChain's
// TokenTextSplitter, Bedrock's fixed-size chunking). With RuneSizer the unit is a code
// point and cuts move back to the nearest grapheme cluster boundary (UAX #29) inside the
// window, so an emoji or a letter with its accents is not cut unless one cluster is longer
// than the window; any other sizer must be a SpanSizer (a tokenizer with offsets). Chunks
// are trimmed of surrounding whitespace; TokenCount is the number of units inside the chunk.
// Errors: size < 1, overlap < 0 or overlap >= size, or a sizer that is neither.
func NewFixed(sizer Sizer, size, overlap int) (Chunker, error) {
	if err := validateSize(sizer, size, overlap); err != nil {
		return nil, err
	}
	if _, ok := sizer.(RuneSizer); !ok {
		if _, ok := sizer.(SpanSizer); !ok {
			return nil, fmt.Errorf("chunkers: Fixed needs RuneSizer or a SpanSizer that reports unit offsets, got %T", sizer)
		}
	}
	return &fixed{sizer: sizer, size: size, overlap: overlap}, nil
}

// NewSlidingWindow returns a chunker of windows of window units started every stride units:
// Fixed with overlap window-stride. Errors: stride < 1, or stride > window (text between
// windows would be lost).
func NewSlidingWindow(sizer Sizer, window, stride int) (Chunker, error) {
	if stride < 1 {
		return nil, fmt.Errorf("chunkers: sliding window stride must be at least 1, got %d", stride)
	}
	if stride > window {
		return nil, fmt.Errorf("chunkers: sliding window stride (%d) must not exceed the window (%d), or text between windows is lost", stride, window)
	}
	return NewFixed(sizer, window, window-stride)
}

// Chunk implements Chunker.
func (f *fixed) Chunk(ctx context.Context, text string) ([]Chunk, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	if _, ok := f.sizer.(RuneSizer); ok {
		return number(f.runes(text)), nil
	}
	return number(f.units(text, f.sizer.(SpanSizer).Spans(text))), nil
}

// units cuts windows of unit spans.
func (f *fixed) units(text string, spans []Span) []Chunk {
	var out []Chunk
	stride := f.size - f.overlap
	for i := 0; i < len(spans); i += stride {
		j := min(i+f.size, len(spans))
		s, e := trimSpan(text, spans[i].Start, spans[j-1].End)
		if s < e {
			out = append(out, Chunk{Start: s, End: e, TokenCount: j - i})
		}
		if j == len(spans) {
			break
		}
	}
	return out
}

// advance returns the byte position n code points after p (or len(text)).
func advance(text string, p, n int) int {
	for ; n > 0 && p < len(text); n-- {
		if text[p] < utf8.RuneSelf {
			p++
			continue
		}
		_, w := utf8.DecodeRuneInString(text[p:])
		p += w
	}
	return p
}

// runes cuts windows of code points at grapheme cluster boundaries.
func (f *fixed) runes(text string) []Chunk {
	var out []Chunk
	stride := f.size - f.overlap
	for start := 0; start < len(text); {
		rawEnd := advance(text, start, f.size)
		end := rawEnd
		if end < len(text) {
			if b := snapGrapheme(text, start, end); b > start {
				end = b
			}
		}
		s, e := trimSpan(text, start, end)
		if s < e {
			out = append(out, Chunk{Start: s, End: e, TokenCount: utf8.RuneCountInString(text[s:e])})
		}
		if end >= len(text) {
			break
		}
		next := end
		if f.overlap > 0 {
			raw := advance(text, start, stride)
			next = snapGrapheme(text, start, raw)
			if next <= start {
				next = end // a cluster longer than the stride: no overlap this once
			}
			next = min(next, end)
		}
		start = next
	}
	return out
}

// snapGrapheme returns the largest grapheme cluster boundary b with lo <= b <= pos, where lo
// is taken as a boundary. Between two ASCII characters other than CR LF there is always a
// boundary, which keeps the common case free of segmentation work.
func snapGrapheme(text string, lo, pos int) int {
	if pos <= lo || pos >= len(text) {
		return pos
	}
	a, b := text[pos-1], text[pos]
	if a < utf8.RuneSelf && b < utf8.RuneSelf && !(a == '\r' && b == '\n') {
		return pos
	}
	// Start segmenting from a nearby certain boundary: between two ASCII bytes.
	q := pos - 1
	for ; q > lo && pos-q < 256; q-- {
		if text[q-1] < utf8.RuneSelf && text[q] < utf8.RuneSelf && !(text[q-1] == '\r' && text[q] == '\n') {
			break
		}
	}
	if q <= lo || pos-q >= 256 {
		q = lo
	}
	best := q
	rest, state, p := text[q:], -1, q
	for len(rest) > 0 {
		var c string
		c, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if p+len(c) > pos {
			break
		}
		p += len(c)
		best = p
	}
	return best
}
