package chunkers

import (
	"strings"
	"testing"
)

// Issue 15, fifth defect: Fixed and SlidingWindow in characters emitted a window lying inside
// the previous one when the text ends in whitespace (size 64, overlap 60 over a text ending
// in "\n": [936,1000) then [940,1000)), and exact duplicates when the window moved over
// indentation only. No chunk may lie inside its predecessor.
func TestRegressionFixedWhitespaceTail(t *testing.T) {
	text := strings.Repeat("abcdefghi ", 100) + "\n" // 1001 bytes, the last one a newline
	for _, c := range []Chunker{must(NewFixed(RuneSizer{}, 64, 60)), must(NewSlidingWindow(RuneSizer{}, 64, 4))} {
		chunks := run(t, c, text)
		checkChunks(t, text, chunks, checkOpts{max: 64, sizer: RuneSizer{}, ordered: true})
		last := chunks[len(chunks)-1]
		if last.End != 999 {
			t.Errorf("last chunk ends at %d, want 999 (the text's last letter)", last.End)
		}
		for i := 1; i < len(chunks); i++ {
			if p := chunks[i-1]; chunks[i].Start >= p.Start && chunks[i].End <= p.End {
				t.Fatalf("chunk %d [%d,%d) lies inside chunk %d [%d,%d)", i, chunks[i].Start, chunks[i].End, i-1, p.Start, p.End)
			}
		}
		// The windows start every 4 characters from 0 until one reaches the end: (936/4)+1.
		if len(chunks) != 235 {
			t.Errorf("%d chunks, want 235", len(chunks))
		}
	}
}

// Indented code: the window moves over leading whitespace only, which trimmed to the same
// span gave exact duplicates.
func TestRegressionFixedIndentationNoDuplicates(t *testing.T) {
	var b strings.Builder
	for i := range 20 {
		b.WriteString("\n                                \tx")
		b.WriteByte(byte('a' + i))
	}
	text := b.String()
	c := must(NewFixed(RuneSizer{}, 16, 12))
	chunks := run(t, c, text)
	checkChunks(t, text, chunks, checkOpts{max: 16, sizer: RuneSizer{}, ordered: true})
	seen := map[Span]bool{}
	for i, ch := range chunks {
		sp := Span{ch.Start, ch.End}
		if seen[sp] {
			t.Fatalf("chunk %d %v repeats an earlier chunk", i, sp)
		}
		seen[sp] = true
	}
	// Each "xa".."xt" is its own chunk: the windows between them hold only whitespace.
	if len(chunks) != 20 {
		t.Errorf("%d chunks, want 20 (one per indented line)", len(chunks))
	}
}

// pieceSizer stands in for a WordPiece tokenizer: a word is cut into pieces of at most 3
// bytes, punctuation is a unit of its own.
type pieceSizer struct{}

func (pieceSizer) Spans(text string) []Span {
	var out []Span
	for _, w := range (WordSizer{}).Spans(text) {
		for p := w.Start; p < w.End; {
			if strings.ContainsRune(".,;:", rune(text[p])) {
				out = append(out, Span{p, p + 1})
				p++
				continue
			}
			e := p
			for e < w.End && e-p < 3 && !strings.ContainsRune(".,;:", rune(text[e])) {
				e++
			}
			out = append(out, Span{p, e})
			p = e
		}
	}
	return out
}

func (s pieceSizer) Size(text string) int { return len(s.Spans(text)) }

// Issue 22, first defect: Fixed in tokens cut between the pieces of one word. Every chunk
// must start and end on a word or punctuation boundary unless one word is longer than the
// window, and TokenCount must be the sizer's count of the chunk's text.
func TestFixedTokensCutBetweenWords(t *testing.T) {
	text := "Arkadelphia is a city. Arkadelphia, Arkansas: population small; it has pieces " +
		"of words everywhere and supercalifragilistic ones too. End."
	for _, p := range [][2]int{{5, 0}, {6, 3}, {8, 4}, {2, 1}, {1, 0}} {
		c := must(NewFixed(pieceSizer{}, p[0], p[1]))
		chunks := run(t, c, text)
		var prevStart = -1
		for i, ch := range chunks {
			if n := (pieceSizer{}).Size(text[ch.Start:ch.End]); n != ch.TokenCount {
				t.Errorf("size %v chunk %d %q: TokenCount %d, recount %d", p, i, text[ch.Start:ch.End], ch.TokenCount, n)
			}
			if ch.TokenCount > p[0] {
				t.Errorf("size %v chunk %d %q: %d units", p, i, text[ch.Start:ch.End], ch.TokenCount)
			}
			longWord := false
			for _, w := range (WordSizer{}).Spans(text) {
				if w.Start < ch.End && ch.Start < w.End && (pieceSizer{}).Size(text[w.Start:w.End]) > p[0] {
					longWord = true
				}
			}
			if !longWord {
				if ch.Start > 0 && isLetter(text[ch.Start-1]) && isLetter(text[ch.Start]) {
					t.Errorf("size %v chunk %d %q starts inside a word", p, i, text[ch.Start:ch.End])
				}
				if ch.End < len(text) && isLetter(text[ch.End-1]) && isLetter(text[ch.End]) {
					t.Errorf("size %v chunk %d %q ends inside a word", p, i, text[ch.Start:ch.End])
				}
			}
			if ch.Start <= prevStart {
				t.Errorf("size %v chunk %d does not advance", p, i)
			}
			prevStart = ch.Start
		}
		checkChunks(t, text, chunks, checkOpts{max: p[0], sizer: pieceSizer{}, ordered: true})
	}
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
