package chunkers

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// OutlineEntry is one heading of a document's outline: its level (1 is outermost), its
// title, and the byte span of the heading in the text. A section runs from its heading's
// Start to the next entry's Start. Document readers (PDF, DOCX, HTML) supply outlines; the
// Heading chunker detects one in Markdown or plain text otherwise.
type OutlineEntry struct {
	Level int    `json:"level"`
	Title string `json:"title"`
	Span
}

// HeadingPattern marks every line that the RE2 regular expression Pattern matches as a
// heading of Level (1 is outermost), e.g. ^Beslispunt.
type HeadingPattern struct {
	Pattern string
	Level   int
}

// HeadingOptions configure NewHeading.
type HeadingOptions struct {
	// Markdown detects ATX (# Title) and Setext (Title underlined with = or -) headings.
	Markdown bool
	// NumberedSections detects lines such as "1.2 Scope" (level = number of components),
	// "Hoofdstuk 2"/"Chapter 2"/"Deel"/"Part"/"Titel"/"Bijlage"/"Annex"/"Appendix" (1),
	// "Afdeling"/"Section"/"Paragraaf" (2) and "Artikel 3"/"Article 3" (3).
	NumberedSections bool
	// Patterns are user heading patterns, tried before numbered sections.
	Patterns []HeadingPattern
}

// HeadingChunker cuts text at section headings: every chunk lies inside one section and
// carries the titles of the headings above it (a heading clears deeper ones from the path).
// A section longer than the size is split recursively (paragraph, line, sentence, word,
// grapheme cluster). Lines inside fenced code blocks are never headings. Markdown tables
// are cut only between rows; a chunk that continues a table carries the table's header
// and separator rows in Chunk.Prefix (text[Start:End] stays exact) and they count
// towards its size; a single row above the size is emitted whole and flagged Oversize.
type HeadingChunker struct {
	sp       *splitter
	opts     HeadingOptions
	patterns []*regexp.Regexp
}

// NewHeading returns a HeadingChunker for chunks of at most size units of sizer with
// overlap units shared inside a section. Errors: bad size/overlap, an invalid pattern, a
// pattern level below 1, or no detector switched on.
func NewHeading(sizer Sizer, size, overlap int, opts HeadingOptions) (*HeadingChunker, error) {
	if err := validateSize(sizer, size, overlap); err != nil {
		return nil, err
	}
	h := &HeadingChunker{opts: opts}
	for i, p := range opts.Patterns {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return nil, fmt.Errorf("chunkers: heading pattern %d %q: %w", i, p.Pattern, err)
		}
		if p.Level < 1 {
			return nil, fmt.Errorf("chunkers: heading pattern %d %q: level must be at least 1, got %d", i, p.Pattern, p.Level)
		}
		h.patterns = append(h.patterns, re)
	}
	levels, _ := recursiveLevels(nil)
	h.sp = &splitter{sizer: sizer, max: size, overlap: overlap, levels: levels}
	return h, nil
}

// Chunk implements Chunker with the outline detected by Outline.
func (h *HeadingChunker) Chunk(ctx context.Context, text string) ([]Chunk, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	lines := splitLines(text)
	return h.chunk(text, lines, h.outline(text, lines))
}

// ChunkOutline chunks text by an outline supplied from outside (entries ordered by Start,
// spans inside the text on code point boundaries, levels >= 1); it errors naming the first
// bad entry. An empty outline gives one section (split by size).
func (h *HeadingChunker) ChunkOutline(ctx context.Context, text string, outline []OutlineEntry) ([]Chunk, error) {
	if err := checkUTF8(text); err != nil {
		return nil, err
	}
	for i, o := range outline {
		switch {
		case o.Level < 1:
			return nil, fmt.Errorf("chunkers: outline entry %d (%q): level must be at least 1, got %d", i, o.Title, o.Level)
		case o.Start < 0 || o.End > len(text) || o.Start > o.End:
			return nil, fmt.Errorf("chunkers: outline entry %d (%q): span %d..%d outside the text (%d bytes)", i, o.Title, o.Start, o.End, len(text))
		case (o.Start < len(text) && !utf8.RuneStart(text[o.Start])) || (o.End < len(text) && !utf8.RuneStart(text[o.End])):
			return nil, fmt.Errorf("chunkers: outline entry %d (%q): span %d..%d cuts inside a code point", i, o.Title, o.Start, o.End)
		case i > 0 && o.Start < outline[i-1].Start:
			return nil, fmt.Errorf("chunkers: outline entry %d (%q) starts at %d, before entry %d at %d", i, o.Title, o.Start, i-1, outline[i-1].Start)
		}
	}
	return h.chunk(text, splitLines(text), outline)
}

// Outline returns the headings detected in text (valid UTF-8).
func (h *HeadingChunker) Outline(text string) []OutlineEntry {
	return h.outline(text, splitLines(text))
}

// line is one line of the text: [s, e) without its newline, next the start of the next line.
type line struct {
	s, e, next int
	fence      bool // inside a fenced code block, or a fence line itself
}

// splitLines splits text into lines and marks fenced code blocks (CommonMark: a run of at
// least three backticks or tildes, indented at most three spaces, closed by a run of the
// same character at least as long).
func splitLines(text string) []line {
	var lines []line
	var fenceChar byte
	fenceLen := 0
	for s := 0; s < len(text); {
		e := strings.IndexByte(text[s:], '\n')
		next := len(text)
		if e < 0 {
			e = len(text)
		} else {
			e += s
			next = e + 1
		}
		l := line{s: s, e: e, next: next}
		body := strings.TrimRight(text[s:e], "\r")
		ind := len(body) - len(strings.TrimLeft(body, " "))
		if ind <= 3 {
			body = body[ind:]
			run := 0
			for run < len(body) && (body[run] == '`' || body[run] == '~') && body[run] == body[0] {
				run++
			}
			if fenceLen == 0 && run >= 3 && !(body[0] == '`' && strings.Contains(body[run:], "`")) {
				fenceChar, fenceLen = body[0], run
				l.fence = true
			} else if fenceLen > 0 && run >= fenceLen && body[0] == fenceChar && strings.TrimSpace(body[run:]) == "" {
				fenceLen = 0
				l.fence = true
			}
		}
		if fenceLen > 0 {
			l.fence = true
		}
		lines = append(lines, l)
		s = next
	}
	return lines
}

var (
	atxRe      = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRe   = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	listRe     = regexp.MustCompile(`^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)`)
	numberedRe = regexp.MustCompile(`^ {0,3}(\d{1,3}(?:\.\d{1,3}){0,5})\.?[ \t]+(\p{Lu}.*)$`)
	keywordRe  = regexp.MustCompile(`^ {0,3}(Deel|Part|Titel|Bijlage|Annex|Appendix|Hoofdstuk|Chapter|Afdeling|Section|Paragraaf|Artikel|Article)[ \t]+([0-9]+[a-z]?|[IVXLC]+)\b\.?(.*)$`)
)

var keywordLevel = map[string]int{"Deel": 1, "Part": 1, "Titel": 1, "Bijlage": 1, "Annex": 1, "Appendix": 1,
	"Hoofdstuk": 1, "Chapter": 1, "Afdeling": 2, "Section": 2, "Paragraaf": 2, "Artikel": 3, "Article": 3}

// outline detects headings line by line.
func (h *HeadingChunker) outline(text string, lines []line) []OutlineEntry {
	var out []OutlineEntry
	prevHeading := false
	for i, l := range lines {
		if l.fence {
			prevHeading = false
			continue
		}
		body := strings.TrimRight(text[l.s:l.e], "\r")
		level, title := 0, ""
		if h.opts.Markdown {
			if m := atxRe.FindStringSubmatch(body); m != nil {
				level, title = len(m[1]), strings.TrimSpace(m[2])
			} else if i > 0 && !prevHeading && setextRe.MatchString(body) {
				p := lines[i-1]
				pb := strings.TrimRight(text[p.s:p.e], "\r")
				if !p.fence && strings.TrimSpace(pb) != "" && !listRe.MatchString(pb) && !strings.HasPrefix(pb, "    ") && !strings.HasPrefix(strings.TrimSpace(pb), "|") {
					lv := 1
					if strings.TrimSpace(body)[0] == '-' {
						lv = 2
					}
					out = append(out, OutlineEntry{Level: lv, Title: strings.TrimSpace(pb), Span: Span{p.s, l.e}})
					prevHeading = true
					continue
				}
			}
		}
		if level == 0 {
			for k, re := range h.patterns {
				if re.MatchString(body) {
					level, title = h.opts.Patterns[k].Level, strings.TrimSpace(body)
					break
				}
			}
		}
		if level == 0 && h.opts.NumberedSections && len(body) <= 200 {
			if m := numberedRe.FindStringSubmatch(body); m != nil {
				level, title = strings.Count(m[1], ".")+1, strings.TrimSpace(body)
			} else if m := keywordRe.FindStringSubmatch(body); m != nil {
				level, title = keywordLevel[m[1]], strings.TrimSpace(body)
			}
		}
		if level > 0 {
			out = append(out, OutlineEntry{Level: level, Title: title, Span: Span{l.s, l.e}})
		}
		prevHeading = level > 0
	}
	return out
}

// chunk cuts the sections of text given by outline.
func (h *HeadingChunker) chunk(text string, lines []line, outline []OutlineEntry) ([]Chunk, error) {
	var out []Chunk
	type frame struct {
		level int
		title string
	}
	var stack []frame
	var path []string
	section := func(s, e int) {
		before := len(out)
		out = h.section(text, lines, s, e, out)
		for i := before; i < len(out); i++ {
			out[i].HeadingPath = path
		}
	}
	section(0, firstStart(outline, len(text)))
	for i, o := range outline {
		for len(stack) > 0 && stack[len(stack)-1].level >= o.Level {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, frame{o.Level, o.Title})
		path = make([]string, len(stack))
		for k, f := range stack {
			path[k] = f.title
		}
		end := len(text)
		if i+1 < len(outline) {
			end = outline[i+1].Start
		}
		section(o.Start, end)
	}
	return number(out), nil
}

func firstStart(outline []OutlineEntry, n int) int {
	if len(outline) == 0 {
		return n
	}
	return outline[0].Start
}

// sepRowRe matches a Markdown table delimiter row such as |---|:--:|.
var sepRowRe = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// section appends the chunks of the section [s, e): the whole section when it fits, else
// its tables row by row and the text between them split recursively.
func (h *HeadingChunker) section(text string, lines []line, s, e int, out []Chunk) []Chunk {
	ts, te := trimSpan(text, s, e)
	if ts == te {
		return out
	}
	if n := h.sp.sizer.Size(text[ts:te]); n <= h.sp.max {
		return append(out, Chunk{Start: ts, End: te, TokenCount: n})
	}
	var segs []seg
	textStart := s
	// Find the lines of the section (binary search would do; sections are scanned once).
	i := lineAt(lines, s)
	for ; i < len(lines) && lines[i].s < e; i++ {
		l := lines[i]
		if l.fence || l.s < s || i+1 >= len(lines) || lines[i+1].s >= e {
			continue
		}
		if !isRow(text, l) || !sepRowRe.MatchString(text[lines[i+1].s:lines[i+1].e]) || lines[i+1].fence {
			continue
		}
		// A table: header row l, separator row, then body rows.
		if textStart < l.s {
			segs = append(segs, seg{s: textStart, e: l.s})
		}
		sep := lines[i+1]
		head := seg{s: l.s, e: min(sep.next, e), atomic: true}
		prefix := text[l.s:min(sep.next, e)]
		if !strings.HasSuffix(prefix, "\n") {
			prefix += "\n"
		}
		segs = append(segs, head)
		j := i + 2
		for ; j < len(lines) && lines[j].s < e && !lines[j].fence && isRow(text, lines[j]); j++ {
			segs = append(segs, seg{s: lines[j].s, e: min(lines[j].next, e), atomic: true, prefix: prefix})
		}
		textStart = segs[len(segs)-1].e
		i = j - 1
	}
	if textStart < e {
		segs = append(segs, seg{s: textStart, e: e})
	}
	return h.sp.pack(text, segs, -1, out)
}

// isRow reports whether a line looks like a Markdown table row (holds a pipe, not blank).
func isRow(text string, l line) bool {
	b := strings.TrimSpace(text[l.s:l.e])
	return b != "" && strings.Contains(b, "|")
}

// lineAt returns the index of the line holding byte offset p.
func lineAt(lines []line, p int) int {
	lo, hi := 0, len(lines)
	for lo < hi {
		m := (lo + hi) / 2
		if lines[m].next <= p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
