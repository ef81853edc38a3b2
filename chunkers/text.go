package chunkers

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// InvalidUTF8Error reports text that is not valid UTF-8.
type InvalidUTF8Error struct {
	// Offset is the byte offset of the first byte that does not start a valid UTF-8 sequence.
	Offset int
}

func (e *InvalidUTF8Error) Error() string {
	return fmt.Sprintf("chunkers: text is not valid UTF-8: invalid byte at offset %d", e.Offset)
}

// checkUTF8 returns an *InvalidUTF8Error naming the first invalid byte of text, or nil.
func checkUTF8(text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	for i := 0; i < len(text); {
		if text[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && w == 1 {
			return &InvalidUTF8Error{Offset: i}
		}
		i += w
	}
	return nil
}

// isSpaceAt reports whether the code point starting at text[i] is whitespace and its width.
func isSpaceAt(text string, i int) (bool, int) {
	c := text[i]
	if c < utf8.RuneSelf {
		return asciiSpace[c], 1
	}
	r, w := utf8.DecodeRuneInString(text[i:])
	return unicode.IsSpace(r), w
}

// trimSpan shrinks [s, e) so that it neither starts nor ends with whitespace
// (unicode.IsSpace), except that the indentation (spaces and tabs) of a first line that
// starts inside the span, or at s on a line start, is kept: code keeps its first line's
// indentation. An all-whitespace span becomes empty (s == e).
func trimSpan(text string, s, e int) (int, int) {
	s0 := s
	for s < e {
		sp, w := isSpaceAt(text, s)
		if !sp {
			break
		}
		s += w
	}
	if s < e {
		k := s
		for k > s0 && (text[k-1] == ' ' || text[k-1] == '\t') {
			k--
		}
		if k > s0 && text[k-1] == '\n' || k == s0 && (s0 == 0 || text[s0-1] == '\n') {
			s = k
		}
	}
	for e > s {
		c := text[e-1]
		if c < utf8.RuneSelf {
			if !asciiSpace[c] {
				break
			}
			e--
			continue
		}
		r, w := utf8.DecodeLastRuneInString(text[s:e])
		if !unicode.IsSpace(r) {
			break
		}
		e -= w
	}
	return s, e
}

// blank reports whether text holds only whitespace.
func blank(text string) bool {
	s, e := trimSpan(text, 0, len(text))
	return s == e
}

// finish checks ctx-independent invariants shared by every strategy and numbers chunks.
func number(chunks []Chunk) []Chunk {
	for i := range chunks {
		chunks[i].Ordinal = i
	}
	return chunks
}

// validateSize checks the size and overlap parameters every strategy takes.
func validateSize(sizer Sizer, size, overlap int) error {
	if sizer == nil {
		return fmt.Errorf("chunkers: sizer is nil")
	}
	if size < 1 {
		return fmt.Errorf("chunkers: size must be at least 1, got %d", size)
	}
	if overlap < 0 {
		return fmt.Errorf("chunkers: overlap must not be negative, got %d", overlap)
	}
	if overlap >= size {
		return fmt.Errorf("chunkers: overlap (%d) must be less than size (%d), or chunking cannot advance", overlap, size)
	}
	return nil
}
