package chunkers

import (
	"context"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// fixed cuts every size units with overlap units shared by neighbours.
type fixed struct {
	sizer         Sizer
	size, overlap int
	// minSize > 0: a last window under it is moved back to hold size units (WithMinSize).
	minSize int
}

// NewFixed returns a chunker that cuts text into windows of size units of sizer, each
// starting size-overlap units after the previous one (chonkie's TokenChunker, LangChain's
// TokenTextSplitter, Bedrock's fixed-size chunking). With RuneSizer the unit is a code
// point and cuts move back to the nearest grapheme cluster boundary (UAX #29) inside the
// window, so an emoji or a letter with its accents is not cut unless one cluster is longer
// than the window; any other sizer must be a SpanSizer (a tokenizer with offsets). Chunks
// are trimmed of surrounding whitespace; a window that would lie inside the previous chunk
// (it moved over whitespace only) is left out. With a SpanSizer, windows start and end
// between pre-tokens (words, punctuation), never between the pieces of one word, and
// TokenCount is the sizer's count of the chunk's text, at most size unless one unit alone
// re-tokenises to more (then Oversize is set).
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
	spans := f.sizer.(SpanSizer).Spans(text)
	out := f.units(text, spans)
	if f.minSize > 0 && len(out) > 1 && out[len(out)-1].TokenCount < f.minSize {
		out = f.fullLastUnits(text, spans, out)
	}
	return number(out), nil
}

// units cuts windows of at most size unit spans. Windows start and end only where a cut
// re-tokenises to the same units (cutOK: whitespace or punctuation between two units), so
// a word's WordPiece pieces are never split across chunks ("Arkadelp|hia" would start the
// next chunk with "hia", which tokenises as "hi ##a"); only a single pre-token longer than
// the window is cut inside. Every chunk is measured again with the sizer: TokenCount is the
// count of the chunk's own text, and a window that re-tokenises above size (a tokenizer
// whose pieces depend on what precedes them) is shortened until it fits. A window that lies
// inside the previous chunk is dropped.
func (f *fixed) units(text string, spans []Span) []Chunk {
	var out []Chunk
	n, stride := len(spans), f.size-f.overlap
	for i := 0; i < n; {
		j := min(i+f.size, n)
		if b := prevCut(text, spans, i, j); j < n && b > i {
			j = b
		}
		s, e := trimSpan(text, spans[i].Start, spans[j-1].End)
		count := f.sizer.Size(text[s:e])
		for count > f.size && j > i+1 {
			if b := prevCut(text, spans, i, j-1); b > i {
				j = b
			} else {
				j--
			}
			s, e = trimSpan(text, spans[i].Start, spans[j-1].End)
			count = f.sizer.Size(text[s:e])
		}
		if s < e && !inside(out, s, e) {
			out = append(out, Chunk{Start: s, End: e, TokenCount: count, Oversize: count > f.size})
		}
		if j == n {
			break
		}
		// The next window starts stride units on, moved back to a cut (or, inside one long
		// pre-token, forward to the first cut up to the end of this window).
		next := min(i+stride, j)
		if b := prevCut(text, spans, i, next); b > i {
			next = b
		} else {
			for next < j && !cutOK(text, spans, next) {
				next++
			}
		}
		i = next
	}
	return out
}

// fullLastUnits replaces the last window of out by the last size units of text, started
// at the first cut at or after them and shortened (moved forward) while it re-tokenises
// above size; windows that lie inside it are dropped.
func (f *fixed) fullLastUnits(text string, spans []Span, out []Chunk) []Chunk {
	n := len(spans)
	i := max(0, n-f.size)
	for i < n-1 && !cutOK(text, spans, i) {
		i++
	}
	s, e := trimSpan(text, spans[i].Start, spans[n-1].End)
	count := f.sizer.Size(text[s:e])
	for count > f.size && i < n-1 {
		i++
		for i < n-1 && !cutOK(text, spans, i) {
			i++
		}
		s, e = trimSpan(text, spans[i].Start, spans[n-1].End)
		count = f.sizer.Size(text[s:e])
	}
	last := out[len(out)-1]
	if count <= last.TokenCount || s >= last.Start {
		return out // no longer than the tail it replaces
	}
	for len(out) > 0 && out[len(out)-1].Start >= s {
		out = out[:len(out)-1]
	}
	return append(out, Chunk{Start: s, End: e, TokenCount: count, Oversize: count > f.size})
}

// prevCut returns the largest b with lo < b <= hi where cutOK holds, or lo when none does.
func prevCut(text string, spans []Span, lo, hi int) int {
	for b := hi; b > lo; b-- {
		if cutOK(text, spans, b) {
			return b
		}
	}
	return lo
}

// cutOK reports whether the text may be cut before unit i of spans so that both sides
// re-tokenise to the same units: i is 0 or len(spans), text the tokenizer skipped
// (whitespace) lies between units i-1 and i, or one side of the cut is whitespace,
// punctuation or a CJK ideograph. BERT's pre-tokenizer splits words there (BasicTokenizer:
// whitespace, punctuation, CJK characters), so no WordPiece continuation ("##") piece starts
// at such a position.
func cutOK(text string, spans []Span, i int) bool {
	if i <= 0 || i >= len(spans) {
		return true
	}
	a, b := spans[i-1], spans[i]
	if b.Start > a.End {
		return true
	}
	if b.Start < a.End || a.Start == a.End || b.Start == b.End {
		return false // units that share characters
	}
	last, _ := utf8.DecodeLastRuneInString(text[a.Start:a.End])
	first, _ := utf8.DecodeRuneInString(text[b.Start:b.End])
	return preTokenEdge(last) || preTokenEdge(first)
}

// preTokenEdge reports whether r is a pre-token on its own or ends one: whitespace,
// punctuation (Unicode P or the ASCII symbols BERT treats as punctuation) or a CJK
// ideograph.
func preTokenEdge(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiSpace[r] || (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.Is(unicode.Han, r)
}

// inside reports whether [s, e) lies within the last chunk of out (a window that moved over
// whitespace only, or the whitespace tail of the text).
func inside(out []Chunk, s, e int) bool {
	if len(out) == 0 {
		return false
	}
	p := out[len(out)-1]
	return s >= p.Start && e <= p.End
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
		if s < e && !inside(out, s, e) {
			out = append(out, Chunk{Start: s, End: e, TokenCount: utf8.RuneCountInString(text[s:e])})
		}
		if end >= len(text) || blank(text[end:]) {
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
	if f.minSize > 0 && len(out) > 1 && out[len(out)-1].TokenCount < f.minSize {
		// The last window under minSize: the last size code points, started at the first
		// grapheme cluster boundary at or after them.
		last := out[len(out)-1]
		total := utf8.RuneCountInString(text[:last.End])
		p := advance(text, 0, max(0, total-f.size))
		for p < last.Start && snapGrapheme(text, 0, p) != p {
			p = advance(text, p, 1)
		}
		if s, e := trimSpan(text, p, last.End); s < last.Start {
			for len(out) > 0 && out[len(out)-1].Start >= s {
				out = out[:len(out)-1]
			}
			out = append(out, Chunk{Start: s, End: e, TokenCount: utf8.RuneCountInString(text[s:e])})
		}
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
