package chunkers

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRuneIndexCounts: the rune index gives RuneSizer's count for every span on code point
// boundaries of a text mixing 1- to 4-byte code points, spans shorter and longer than a
// block (eight-byte words counted at once and the bytes left over), an ASCII text counted
// by length, and the splitter uses it only for the text it was built for.
func TestRuneIndexCounts(t *testing.T) {
	text := strings.Repeat("abc déf 漢字 🙂 x\n", 97)
	var bounds []int
	for i := range text {
		bounds = append(bounds, i)
	}
	bounds = append(bounds, len(text))
	x := newRuneIndex(text)
	rng := rand.New(rand.NewSource(1))
	for k := 0; k < 5000; k++ {
		s, e := bounds[rng.Intn(len(bounds))], bounds[rng.Intn(len(bounds))]
		if s > e {
			s, e = e, s
		}
		if got, want := x.count(s, e), utf8.RuneCountInString(text[s:e]); got != want {
			t.Fatalf("count(%d, %d) = %d, want %d", s, e, got, want)
		}
	}
	sp := (&splitter{sizer: RuneSizer{}}).indexed(text)
	if sp.runes == nil {
		t.Fatal("no index for RuneSizer")
	}
	other := strings.Repeat("ü", len(text)/2) // same length, other text
	if got, want := sp.size(other, 0, len(other)), utf8.RuneCountInString(other); got != want {
		t.Fatalf("size of another text %d, want %d", got, want)
	}
	for _, long := range []string{strings.Repeat(text, 40), strings.Repeat("漢", 30000) + "x", strings.Repeat("é", 20000)} {
		if got, want := leadBytes(long), utf8.RuneCountInString(long); got != want {
			t.Fatalf("leadBytes of %d bytes = %d, want %d", len(long), got, want)
		}
	}
	ascii := strings.Repeat("Plain ASCII text.\n", 40)
	if a := newRuneIndex(ascii); !a.ascii || a.count(3, 500) != 497 {
		t.Fatalf("ASCII text: index %+v counts %d for [3, 500)", a.ascii, a.count(3, 500))
	}
	if newRuneIndex(ascii + "é").ascii {
		t.Fatal("a text with a 2-byte code point indexed as ASCII")
	}
	if (&splitter{sizer: WordSizer{}}).indexed(text).runes != nil {
		t.Fatal("an index for WordSizer")
	}
}
