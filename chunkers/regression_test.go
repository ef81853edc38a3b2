package chunkers

import (
	"strings"
	"testing"

	"github.com/rivo/uniseg"
)

// Regression tests for faults that peer chunkers shipped; each states the right answer.

// A repeated sentence must get distinct, increasing offsets (peers located chunks with
// text.find and reported the first occurrence every time).
func TestRegressionRepeatedSentenceOffsets(t *testing.T) {
	text := "Yes. Yes. Yes. Yes."
	c, _ := NewSentence(RuneSizer{}, 5, 0, SentenceOptions{})
	chunks := run(t, c, text)
	want := []Span{{0, 4}, {5, 9}, {10, 14}, {15, 19}}
	if len(chunks) != len(want) {
		t.Fatalf("got %d chunks, want %d", len(chunks), len(want))
	}
	for i, ch := range chunks {
		if (Span{ch.Start, ch.End}) != want[i] || text[ch.Start:ch.End] != "Yes." {
			t.Errorf("chunk %d at %d..%d, want %v", i, ch.Start, ch.End, want[i])
		}
	}
}

// A "# comment" line inside a fenced code block is not a heading.
func TestRegressionCommentInFence(t *testing.T) {
	text := "# Install\n\nRun:\n\n```bash\n# comment, not a heading\npip install x\n```\n\n~~~\n# also not\n~~~\n\n## Use\nDone."
	h, _ := NewHeading(RuneSizer{}, 1000, 0, HeadingOptions{Markdown: true, NumberedSections: true})
	var titles []string
	for _, o := range h.Outline(text) {
		titles = append(titles, o.Title)
	}
	if strings.Join(titles, "|") != "Install|Use" {
		t.Fatalf("headings %q, want [Install Use]", titles)
	}
	chunks := run(t, h, text)
	if len(chunks) != 2 || !strings.Contains(text[chunks[0].Start:chunks[0].End], "# comment, not a heading") {
		t.Fatalf("the code block must stay in the Install section: %+v", chunks)
	}
}

// A whitespace-free run (URL, base64) longer than the size is hard-split to the size.
func TestRegressionLongRunHardSplit(t *testing.T) {
	run64 := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 6) // 210 bytes of base64
	text := "See https://example.org/" + run64 + " now."
	for _, c := range []Chunker{
		must(NewRecursive(RuneSizer{}, 50, 0, nil)),
		must(NewSentence(RuneSizer{}, 50, 0, SentenceOptions{})),
		must(NewParagraph(RuneSizer{}, 50, 0)),
	} {
		chunks := run(t, c, text)
		checkChunks(t, text, chunks, checkOpts{max: 50, sizer: RuneSizer{}, ordered: true})
		if len(chunks) < 5 {
			t.Errorf("%T: %d chunks for a 240-character run at size 50", c, len(chunks))
		}
		for _, ch := range chunks {
			if ch.TokenCount > 50 {
				t.Errorf("%T: chunk of %d characters", c, ch.TokenCount)
			}
		}
	}
}

// Overlap of size-1 terminates and makes progress of one unit per chunk.
func TestRegressionOverlapSizeMinusOne(t *testing.T) {
	text := "one two three four five six seven eight nine ten"
	f := must(NewFixed(WordSizer{}, 3, 2))
	chunks := run(t, f, text)
	if len(chunks) != 8 || text[chunks[0].Start:chunks[0].End] != "one two three" || text[chunks[7].Start:chunks[7].End] != "eight nine ten" {
		t.Fatalf("Fixed 3/2 gave %d chunks: %+v", len(chunks), chunks)
	}
	for _, c := range []Chunker{must(NewFixed(RuneSizer{}, 4, 3)), must(NewRecursive(RuneSizer{}, 4, 3, nil)), must(NewSentence(WordSizer{}, 2, 1, SentenceOptions{}))} {
		chunks := run(t, c, text)
		checkChunks(t, text, chunks, checkOpts{max: 4, sizer: sizerOf(c), ordered: true, unitCount: isFixed(c)})
		if len(chunks) > 4*len(text) {
			t.Errorf("%T: %d chunks", c, len(chunks))
		}
	}
}

// An emoji (ZWJ sequence, flag, skin tone) or a CJK character at a boundary is never cut.
func TestRegressionEmojiAndCJKBoundaries(t *testing.T) {
	family := "👨\u200d👩\u200d👧" // one grapheme, 5 code points
	text := strings.Repeat("ab"+family+"🇳🇱👍🏽漢字。", 8)
	graphemes := map[int]bool{0: true, len(text): true}
	for p := 0; p < len(text); {
		p += len(firstGrapheme(text[p:]))
		graphemes[p] = true
	}
	for _, size := range []int{3, 5, 7, 11} {
		for _, c := range []Chunker{must(NewFixed(RuneSizer{}, size, 1)), must(NewRecursive(RuneSizer{}, size, 0, nil)), must(NewSentence(RuneSizer{}, size, 0, SentenceOptions{}))} {
			chunks := run(t, c, text)
			checkChunks(t, text, chunks, checkOpts{max: size, sizer: RuneSizer{}, ordered: true, unitCount: isFixed(c)})
			for _, ch := range chunks {
				if size >= 5 && (!graphemes[ch.Start] || !graphemes[ch.End]) {
					t.Errorf("%T size %d: chunk %q cuts a grapheme cluster", c, size, text[ch.Start:ch.End])
				}
			}
		}
	}
}

// Separators and trailing punctuation are kept (peers dropped the separator).
func TestRegressionSeparatorsKept(t *testing.T) {
	text := "Alpha; beta; gamma; delta."
	c := must(NewRecursive(RuneSizer{}, 12, 0, []string{"; "}))
	var got []string
	for _, ch := range run(t, c, text) {
		got = append(got, text[ch.Start:ch.End])
	}
	if strings.Join(got, "|") != "Alpha; beta;|gamma;|delta." {
		t.Fatalf("got %q, want [Alpha; beta; gamma; delta.]", got)
	}
}

// "Dr. Pablo" keeps its space and is not a sentence end.
func TestRegressionDrPablo(t *testing.T) {
	text := "Dr. Pablo arrived. He left."
	c := must(NewSentence(RuneSizer{}, 20, 0, SentenceOptions{}))
	chunks := run(t, c, text)
	if len(chunks) != 2 || text[chunks[0].Start:chunks[0].End] != "Dr. Pablo arrived." {
		t.Fatalf("got %+v", chunks)
	}
	g, _ := NewSentenceSegmenter([]string{"nl"})
	var got []string
	s := "Dit is o.a. bepaald in art. 3 Gemeentewet. Zie bijv. Nr. 5 en blz. 12 Klaar。下一句！好"
	for _, sp := range g.Sentences(s) {
		got = append(got, s[sp.Start:sp.End])
	}
	want := []string{"Dit is o.a. bepaald in art. 3 Gemeentewet. ", "Zie bijv. Nr. 5 en blz. 12 Klaar。", "下一句！", "好"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sentences %q\nwant %q", got, want)
	}
}

// A section header excluded from splitting (a heading line alone, or a heading with a
// body too long for one chunk) is not lost: it is inside a chunk of its section.
func TestRegressionHeaderNotLost(t *testing.T) {
	text := "# Title\n\n## Empty section\n\n## Long\n\n" + strings.Repeat("Words go here. ", 20)
	h, _ := NewHeading(RuneSizer{}, 40, 0, HeadingOptions{Markdown: true})
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 40, sizer: RuneSizer{}, ordered: true})
	for _, head := range []string{"# Title", "## Empty section", "## Long"} {
		found := false
		for _, c := range chunks {
			if strings.HasPrefix(text[c.Start:c.End], head) {
				found = true
			}
		}
		if !found {
			t.Errorf("heading %q is in no chunk", head)
		}
	}
}

func must(c Chunker, err error) Chunker {
	if err != nil {
		panic(err)
	}
	return c
}

func sizerOf(c Chunker) Sizer {
	switch v := c.(type) {
	case *fixed:
		return v.sizer
	case *splitChunker:
		return v.sp.sizer
	}
	return RuneSizer{}
}

func isFixed(c Chunker) bool { _, ok := c.(*fixed); return ok }

// firstGrapheme returns the first extended grapheme cluster of s, from uniseg directly.
func firstGrapheme(s string) string {
	c, _, _, _ := uniseg.FirstGraphemeClusterInString(s, -1)
	return c
}
