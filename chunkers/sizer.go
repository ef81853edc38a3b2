package chunkers

import (
	"unicode"
	"unicode/utf8"
)

// SpanSizer is a Sizer that can also say where each unit lies: Spans returns the byte spans
// of the units of text in order (for a tokenizer, the tokens' offsets; special tokens
// excluded), with len(Spans(t)) == Size(t). Every non-whitespace byte of text must lie in
// some span. Fixed and SlidingWindow need it to cut at exact unit positions.
type SpanSizer interface {
	Sizer
	Spans(text string) []Span
}

// RuneSizer measures text in Unicode code points (the Characters unit).
type RuneSizer struct{}

// Size returns the number of code points in text.
func (RuneSizer) Size(text string) int { return utf8.RuneCountInString(text) }

// WordSizer measures text in words: maximal runs of non-whitespace code points
// (unicode.IsSpace separates them). It stands in for a tokenizer in tests.
type WordSizer struct{}

// Size returns the number of words in text.
func (WordSizer) Size(text string) int {
	n, in := 0, false
	for i := 0; i < len(text); {
		c := text[i]
		var sp bool
		if c < utf8.RuneSelf {
			sp = asciiSpace[c]
			i++
		} else {
			r, w := utf8.DecodeRuneInString(text[i:])
			sp = unicode.IsSpace(r)
			i += w
		}
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// Spans returns the byte spans of the words of text.
func (WordSizer) Spans(text string) []Span {
	var out []Span
	start := -1
	for i := 0; i < len(text); {
		c := text[i]
		var sp bool
		w := 1
		if c < utf8.RuneSelf {
			sp = asciiSpace[c]
		} else {
			var r rune
			r, w = utf8.DecodeRuneInString(text[i:])
			sp = unicode.IsSpace(r)
		}
		if sp && start >= 0 {
			out = append(out, Span{start, i})
			start = -1
		} else if !sp && start < 0 {
			start = i
		}
		i += w
	}
	if start >= 0 {
		out = append(out, Span{start, len(text)})
	}
	return out
}

var asciiSpace = [256]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}
