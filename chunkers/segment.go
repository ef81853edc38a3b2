package chunkers

import (
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// cutter appends to cuts the byte positions strictly inside (s, e) where text[s:e] may be
// cut at one level of the separator hierarchy, in increasing order. The segments between
// cuts are contiguous: a separator stays at the end of the segment before it.
type cutter func(text string, s, e int, cuts []int) []int

// cutParagraphs cuts after every run of whitespace that holds a blank line.
func cutParagraphs(text string, s, e int, cuts []int) []int {
	for i := s; i < e; {
		j := strings.IndexByte(text[i:e], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		k := i
		for k < e && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r') {
			k++
		}
		if k < e && text[k] == '\n' {
			for k < e {
				sp, w := isSpaceAt(text, k)
				if !sp {
					break
				}
				k += w
			}
			if k < e {
				cuts = append(cuts, k)
			}
			i = k
		}
	}
	return cuts
}

// cutLines cuts after every newline.
func cutLines(text string, s, e int, cuts []int) []int {
	for i := s; i < e; {
		j := strings.IndexByte(text[i:e], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if i < e {
			cuts = append(cuts, i)
		}
	}
	return cuts
}

// cutWords cuts before every non-whitespace code point that follows whitespace, so each
// segment is a word with its trailing whitespace.
func cutWords(text string, s, e int, cuts []int) []int {
	prevSpace := false
	for i := s; i < e; {
		sp, w := isSpaceAt(text, i)
		if !sp && prevSpace && i > s {
			cuts = append(cuts, i)
		}
		prevSpace = sp
		i += w
	}
	return cuts
}

// cutGraphemes cuts between extended grapheme clusters (Unicode UAX #29).
func cutGraphemes(text string, s, e int, cuts []int) []int {
	rest, state, pos := text[s:e], -1, s
	for len(rest) > 0 {
		var c string
		c, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		pos += len(c)
		if pos < e {
			cuts = append(cuts, pos)
		}
	}
	return cuts
}

// cutCodePoints cuts between code points: the last resort, never inside one.
func cutCodePoints(text string, s, e int, cuts []int) []int {
	for i := s; i < e; {
		_, w := utf8.DecodeRuneInString(text[i:e])
		i += w
		if i < e {
			cuts = append(cuts, i)
		}
	}
	return cuts
}

// cutLiteral returns a cutter that cuts after every occurrence of sep.
func cutLiteral(sep string) cutter {
	return func(text string, s, e int, cuts []int) []int {
		for i := s; i < e; {
			j := strings.Index(text[i:e], sep)
			if j < 0 {
				break
			}
			i += j + len(sep)
			if i < e {
				cuts = append(cuts, i)
			}
		}
		return cuts
	}
}
