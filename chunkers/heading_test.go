package chunkers

import (
	"context"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) string {
	b, err := os.ReadFile("testdata/markdown/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func councilHeading(t *testing.T, size int) *HeadingChunker {
	h, err := NewHeading(RuneSizer{}, size, 0, HeadingOptions{Markdown: true, NumberedSections: true,
		Patterns: []HeadingPattern{{`^Beslispunt`, 2}, {`^Motivering`, 3}, {`^Stemverhouding`, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHeadingCouncilOutline checks numbered sections, keyword sections and user patterns,
// and that a shallower heading clears deeper ones from the path.
func TestHeadingCouncilOutline(t *testing.T) {
	text := readTestdata(t, "raadsbesluit.txt")
	h := councilHeading(t, 2000)
	var got []string
	for _, o := range h.Outline(text) {
		got = append(got, strings.Repeat("#", o.Level)+o.Title)
		if text[o.Start:o.End] != o.Title {
			t.Errorf("outline span %v holds %q, title %q", o.Span, text[o.Start:o.End], o.Title)
		}
	}
	want := []string{"#1 Inleiding", "##1.1 Procedure", "##Beslispunt 1", "###Motivering", "##Beslispunt 2",
		"###Motivering", "########Artikel 3", "##Stemverhouding"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outline\n got %q\nwant %q", got, want)
	}
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 2000, sizer: RuneSizer{}, ordered: true, atomicOK: true})
	paths := map[string]bool{}
	for _, c := range chunks {
		paths[strings.Join(c.HeadingPath, " > ")] = true
		if strings.HasPrefix(text[c.Start:], "Beslispunt 2") && !reflect.DeepEqual(c.HeadingPath, []string{"1 Inleiding", "Beslispunt 2"}) {
			t.Errorf("Beslispunt 2 path %q: the earlier Motivering must be cleared", c.HeadingPath)
		}
	}
	for _, p := range []string{"", "1 Inleiding", "1 Inleiding > 1.1 Procedure", "1 Inleiding > Beslispunt 1 > Motivering", "1 Inleiding > Stemverhouding"} {
		if !paths[p] {
			t.Errorf("no chunk with heading path %q (have %v)", p, paths)
		}
	}
}

// TestHeadingTableContinuation cuts the vote table of a long section: no chunk cuts a row,
// and every continued table chunk repeats the header and separator rows in Prefix.
func TestHeadingTableContinuation(t *testing.T) {
	text := readTestdata(t, "raadsbesluit.txt")
	h := councilHeading(t, 90)
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 90, sizer: RuneSizer{}, ordered: true, atomicOK: true})
	header := "| Fractie | Voor | Tegen |\n| --- | --- | --- |\n"
	continued := 0
	for _, c := range chunks {
		body := text[c.Start:c.End]
		if !strings.Contains(body, "| ") {
			continue
		}
		for _, ln := range strings.Split(body, "\n") {
			if strings.HasPrefix(ln, "|") && !strings.HasSuffix(ln, "|") {
				t.Errorf("chunk %d cuts a table row: %q", c.Ordinal, ln)
			}
		}
		if strings.HasPrefix(body, "| ") && !strings.HasPrefix(body, "| Fractie") {
			continued++
			if c.Prefix != header {
				t.Errorf("continued table chunk %d has prefix %q, want %q", c.Ordinal, c.Prefix, header)
			}
			if !strings.HasPrefix(c.Text(text), header+"| ") {
				t.Errorf("chunk %d text %q does not start with the repeated header", c.Ordinal, c.Text(text))
			}
		} else if c.Prefix != "" {
			t.Errorf("chunk %d %q has prefix %q", c.Ordinal, body, c.Prefix)
		}
	}
	if continued < 2 {
		t.Fatalf("table continued in %d chunks, want >= 2 at size 90", continued)
	}
}

// TestHeadingOversizeRow: a single row longer than the size stays whole and is flagged.
func TestHeadingOversizeRow(t *testing.T) {
	text := "# T\n\n| a | b |\n|---|---|\n| " + strings.Repeat("x", 50) + " | y |\n| c | d |\n"
	h, _ := NewHeading(RuneSizer{}, 20, 0, HeadingOptions{Markdown: true})
	chunks := run(t, h, text)
	checkChunks(t, text, chunks, checkOpts{max: 20, sizer: RuneSizer{}, ordered: true, atomicOK: true})
	found := false
	for _, c := range chunks {
		if strings.Contains(text[c.Start:c.End], "xxx") {
			found = true
			if !c.Oversize || text[c.Start:c.End] != "| "+strings.Repeat("x", 50)+" | y |" {
				t.Errorf("long row chunk %+v %q: want the whole row, flagged Oversize", c, text[c.Start:c.End])
			}
		}
	}
	if !found {
		t.Fatal("long row lost")
	}
}

// TestHeadingMarkdownReadmes runs the Markdown detector over real READMEs with tables and
// fenced code: no heading inside a fence, properties hold at several sizes.
func TestHeadingMarkdownReadmes(t *testing.T) {
	for _, name := range []string{"goldmark-README.md", "logr-README.md"} {
		text := readTestdata(t, name)
		lines := splitLines(text)
		h, _ := NewHeading(RuneSizer{}, 400, 40, HeadingOptions{Markdown: true})
		outline := h.Outline(text)
		if len(outline) < 10 {
			t.Fatalf("%s: only %d headings", name, len(outline))
		}
		for _, o := range outline {
			if lines[lineAt(lines, o.Start)].fence {
				t.Errorf("%s: heading %q inside a fenced code block", name, o.Title)
			}
		}
		for _, size := range []int{30, 400, 5000} {
			for _, sz := range []Sizer{RuneSizer{}, WordSizer{}} {
				h, _ := NewHeading(sz, size, size/10, HeadingOptions{Markdown: true, NumberedSections: true})
				chunks := run(t, h, text)
				checkChunks(t, text, chunks, checkOpts{max: size, sizer: sz, ordered: true, atomicOK: true})
				for _, c := range chunks {
					if c.Oversize && !strings.HasPrefix(text[c.Start:c.End], "|") && len([]rune(text[c.Start:c.End])) != 1 {
						t.Errorf("%s size %d: oversize chunk is not a table row: %q", name, size, text[c.Start:c.End])
					}
				}
			}
		}
	}
}

// TestHeadingOutlineFromReader uses an outline supplied from outside.
func TestHeadingOutlineFromReader(t *testing.T) {
	text := "Preface text.\nChapter One\nBody one.\nPart A\nBody A.\nChapter Two\nBody two."
	at := func(s string) Span { i := strings.Index(text, s); return Span{i, i + len(s)} }
	outline := []OutlineEntry{{1, "Chapter One", at("Chapter One")}, {2, "Part A", at("Part A")}, {1, "Chapter Two", at("Chapter Two")}}
	h, _ := NewHeading(RuneSizer{}, 100, 0, HeadingOptions{})
	chunks, err := h.ChunkOutline(context.Background(), text, outline)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chunks {
		got = append(got, strings.Join(c.HeadingPath, "/")+"="+text[c.Start:c.End])
	}
	want := []string{"=Preface text.", "Chapter One=Chapter One\nBody one.", "Chapter One/Part A=Part A\nBody A.", "Chapter Two=Chapter Two\nBody two."}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	bad := []OutlineEntry{{1, "x", Span{5, 3}}}
	if _, err := h.ChunkOutline(context.Background(), text, bad); err == nil || !strings.Contains(err.Error(), "entry 0") {
		t.Errorf("bad span: %v", err)
	}
	bad = []OutlineEntry{{1, "b", at("Part A")}, {1, "a", at("Chapter One")}}
	if _, err := h.ChunkOutline(context.Background(), text, bad); err == nil || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("unordered outline: %v", err)
	}
	if _, err := NewHeading(RuneSizer{}, 10, 0, HeadingOptions{Patterns: []HeadingPattern{{"([", 1}}}); err == nil {
		t.Error("invalid pattern accepted")
	}
}

// TestATXHeadingMatchesRegexp: the hand parser of ATX heading lines gives atxRe's level and
// title (trimmed) for every line of the Markdown READMEs and the council decision, and for
// edge cases (closing sequences, tabs, seven hashes, no space, Unicode spaces, a title ending
// in '#'); leadByte lets through every line the Markdown block regexps match.
func TestATXHeadingMatchesRegexp(t *testing.T) {
	lines := []string{"#", "# ", "#\t", "# #", "## ###", "### Title ###", "# Title #  ", "#5 x", "#######",
		"###### six", "####### seven", "   # three spaces", "    # four spaces", "#\tTab\t#\t", "# C#", "# a \\#",
		"# Title #\u00a0", "# \u00a0Title\u00a0", "##Title", "# Title ## more", " ## x ##", "#\r", "# x\r #", ""}
	for _, name := range []string{"goldmark-README.md", "logr-README.md", "raadsbesluit.txt"} {
		lines = append(lines, strings.Split(readTestdata(t, name), "\n")...)
	}
	for _, l := range lines {
		lv, title, ok := atxHeading(l)
		m := atxRe.FindStringSubmatch(l)
		if ok != (m != nil) || ok && (lv != len(m[1]) || title != strings.TrimSpace(m[2])) {
			t.Errorf("%q: atxHeading %d %q %v, atxRe %q", l, lv, title, ok, m)
		}
		lead := string([]byte{leadByte(l)})
		for re, first := range map[*regexp.Regexp]string{atxRe: "#", setextRe: "=-", listItemRe: "-*+0123456789", quoteRe: ">"} {
			if re.MatchString(l) && !strings.Contains(first, lead) {
				t.Errorf("%q matches %v but leadByte gives %q", l, re, lead)
			}
		}
	}
}
