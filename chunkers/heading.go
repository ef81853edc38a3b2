package chunkers

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
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
	// NumberedSections detects, in text without Markdown headings:
	//   - Dutch legal divisions, outermost first: Boek, Deel, Titel(deel), Hoofdstuk,
	//     Afdeling, Paragraaf or §, Subparagraaf, Artikel N[a-z] (also "Artikel 6:12",
	//     "Artikel 1.1"), with the English Part, Chapter, Section, Article beside their peers
	//     and Bijlage/Annex/Appendix outermost, each followed by the end of the line or a
	//     title that does not start in lower case;
	//   - the sections of a Dutch decision alone on their line, all at the outermost level:
	//     Beslispunt(en) [N], Motivering, Overwegende [dat], Besluit(en), Stemverhouding;
	//   - numbered sections such as "1.2 Scope" (one level per component; below a Hoofdstuk
	//     or higher division, one level below it per component after the first) whose title
	//     has at most 120 runes and does not end in ".", ";", ":" or "," (a numbered list
	//     item is no heading).
	NumberedSections bool
	// Patterns are user heading patterns, tried before numbered sections.
	Patterns []HeadingPattern
	// PathPrefix sets each chunk's Chunk.PathPrefix to its heading path ("A > B > C\n") so
	// the embedding sees where the chunk stands. The prefix counts toward the size: a
	// section is cut to size minus the prefix's size. A path measuring more than half the
	// size keeps only its innermost titles that fit in half; text and offsets are unchanged.
	PathPrefix bool
}

// HeadingChunker cuts text at section headings: every chunk lies inside one section and
// carries the titles of the headings above it (a heading clears deeper ones from the path).
// A section longer than the size is split recursively (paragraph, line, sentence, word,
// grapheme cluster). Lines inside fenced code blocks are never headings. Markdown tables,
// and tables as the readers write them (a block of tab-separated rows, the first the
// header: reader.Builder.Table), are cut only between rows; a chunk that continues a table
// carries the table's header (and separator) rows in Chunk.Prefix (text[Start:End] stays exact) and they count
// towards its size, unless header and first row together exceed the size (the chunk then
// goes without the header); a single row above the size is emitted whole and flagged
// Oversize.
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

// LineOutline returns the headings that the patterns and NumberedSections detect in text
// (valid UTF-8), leaving Markdown out: the headings a reader's outline may lack, such as a
// "Beslispunt" paragraph in a DOCX without a heading style. Nil when neither is set.
func (h *HeadingChunker) LineOutline(text string) []OutlineEntry {
	if len(h.patterns) == 0 && !h.opts.NumberedSections {
		return nil
	}
	lo := *h
	lo.opts.Markdown = false
	return lo.outline(text, splitLines(text))
}

// line is one line of the text: [s, e) without its newline, next the start of the next line.
type line struct {
	s, e, next int
	fence      bool // inside a fenced code block, or a fence line itself
}

// splitLines splits text into lines and marks fenced code blocks (CommonMark: a run of at
// least three backticks or tildes, indented at most three spaces past its container's
// content column, closed by a run of the same character at least as long). A fence opened
// inside a list item ends with the item, at the first non-blank line indented less than the
// item's content (CommonMark 5.2; lazy paragraph continuation lines end the item here too);
// one opened inside a block quote ends at the first line without its ">" marker.
func splitLines(text string) []line {
	var lines []line
	var fenceChar byte
	fenceLen := 0
	fenceIndent := 0    // content column of the list item holding the open fence, 0 at top level
	itemIndent := 0     // content column of the list item the scan is in, 0 outside lists
	fenceQuote := false // the open fence is inside a block quote
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
		blank := ind == len(body) || strings.TrimSpace(body) == ""
		lead := leadByte(body)
		var quoted []int
		if lead == '>' {
			quoted = quoteRe.FindStringIndex(body)
		}
		if fenceLen > 0 && fenceIndent > 0 && !blank && ind < fenceIndent {
			fenceLen, itemIndent = 0, 0 // the list item, and with it the fence, has ended
		}
		if fenceLen > 0 && fenceQuote && quoted == nil {
			fenceLen = 0 // the block quote, and with it the fence, has ended
		}
		if fenceLen == 0 {
			container, rest := 0, body
			fenceQuote = quoted != nil
			var m []int
			if lead == '-' || lead == '*' || lead == '+' || '0' <= lead && lead <= '9' {
				m = listItemRe.FindStringIndex(body)
			}
			switch {
			case quoted != nil:
				rest = body[quoted[1]:]
			case m != nil:
				itemIndent, container, rest = m[1], m[1], body[m[1]:]
			case itemIndent > 0 && !blank && ind >= itemIndent:
				container, rest = itemIndent, body[itemIndent:]
			case !blank && ind < itemIndent:
				itemIndent = 0
			}
			if run, c, ok := fenceRun(rest); ok && run >= 3 && !(c == '`' && strings.Contains(strings.TrimLeft(rest, " ")[run:], "`")) {
				fenceChar, fenceLen, fenceIndent = c, run, container
				l.fence = true
			}
		} else {
			rest := body
			if fenceQuote {
				rest = body[quoted[1]:]
			} else if fenceIndent > 0 && !blank {
				rest = body[fenceIndent:]
			}
			if run, c, ok := fenceRun(rest); ok && run >= fenceLen && c == fenceChar && strings.TrimSpace(strings.TrimLeft(rest, " ")[run:]) == "" {
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

// atxHeading returns the level and title of an ATX heading line ("## Title ##"), as atxRe
// reads it; ok is false for other lines. A line whose text ends in '#' (a closing sequence,
// or a title ending in one) goes to atxRe itself; the others are parsed by hand, the regexp's
// backtracking being most of the Heading strategy's time on Markdown.
func atxHeading(body string) (level int, title string, ok bool) {
	i := 0
	for i < 3 && i < len(body) && body[i] == ' ' {
		i++
	}
	n := 0
	for i+n < len(body) && body[i+n] == '#' {
		n++
	}
	rest := body[i+n:]
	if n == 0 || n > 6 || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false
	}
	if strings.HasSuffix(strings.TrimRight(rest, " \t"), "#") {
		m := atxRe.FindStringSubmatch(body)
		if m == nil {
			return 0, "", false
		}
		return len(m[1]), strings.TrimSpace(m[2]), true
	}
	return n, strings.TrimSpace(rest), true
}

// leadByte returns the byte of s after at most three leading spaces (0 when there is none):
// the Markdown block regexps (atxRe, setextRe, listItemRe, quoteRe) can match only when it is
// one of their first characters, so they are run only then.
func leadByte(s string) byte {
	for i := 0; i < len(s) && i <= 3; i++ {
		if s[i] != ' ' {
			return s[i]
		}
	}
	return 0
}

// fenceRun returns the length and character of the run of backticks or tildes that starts
// s after at most three spaces; ok is false when s starts otherwise.
func fenceRun(s string) (run int, c byte, ok bool) {
	ind := len(s) - len(strings.TrimLeft(s, " "))
	if ind > 3 || ind == len(s) || (s[ind] != '`' && s[ind] != '~') {
		return 0, 0, false
	}
	c = s[ind]
	for run = 0; ind+run < len(s) && s[ind+run] == c; run++ {
	}
	return run, c, true
}

var (
	atxRe      = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextRe   = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	listRe     = regexp.MustCompile(`^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)`)
	listItemRe = regexp.MustCompile(`^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)`)
	quoteRe    = regexp.MustCompile(`^ {0,3}> ?`)
	numberedRe = regexp.MustCompile(`^ {0,3}(\d{1,3}(?:\.\d{1,3}){0,5})\.?[ \t]+(\p{Lu}.*)$`)
	// keywordRe matches a legal division: keyword, number (Arabic with an optional letter
	// suffix and ":"- or "."-separated parts as in "Artikel 6:12" or "Artikel 1.1", or
	// Roman), then the end of the line or a title after optional punctuation.
	keywordRe = regexp.MustCompile(`^ {0,3}(?:(§)[ \t]*|(Boek|Deel|Titeldeel|Titel|Hoofdstuk|Afdeling|Sub-?paragraaf|Paragraaf|Artikel|Art\.|Bijlage|Part|Chapter|Section|Article|Annex|Appendix)[ \t]+)` +
		`([0-9]+(?:[.:][0-9]+)*[a-zA-Z]{0,6}|[IVXLC]+[a-zA-Z]?)\.?(?:[ \t]*[:\-\x{2013}\x{2014}])?(?:[ \t]+(.*?))?[ \t]*$`)
	// decisionRe matches the sections of a Dutch council or executive decision, alone on
	// their line: "Beslispunt 2", "Motivering", "Overwegende dat:", "BESLUIT:", "Stemverhouding".
	decisionRe = regexp.MustCompile(`(?i)^ {0,3}(beslispunt(?:en)?(?:[ \t]+\d{1,3}[a-z]?)?|motivering|overwegende(?:[ \t]+dat)?|besluit(?:en)?|stemverhouding)[ \t]*[:.,]?[ \t]*$`)
)

// keywordLevel ranks the divisions of Dutch legislation as the BWB orders them (Boek,
// Deel, Titeldeel, Hoofdstuk, Afdeling, Paragraaf, Subparagraaf, Artikel), English ones
// beside their Dutch peers; annexes are outermost. Only the order matters: a heading clears
// the headings of the same or a deeper level from the path.
var keywordLevel = map[string]int{"Boek": 1, "Bijlage": 1, "Annex": 1, "Appendix": 1,
	"Deel": 2, "Part": 2, "Titeldeel": 3, "Titel": 3, "Hoofdstuk": 4, "Chapter": 4,
	"Afdeling": 5, "Section": 5, "Paragraaf": 6, "§": 6, "Subparagraaf": 7, "Sub-paragraaf": 7,
	"Artikel": 8, "Art.": 8, "Article": 8}

// decisionLevel is the level of a decision's sections (Beslispunt, Motivering, ...): siblings
// of each other and of chapters, above the articles of a regulation they hold.
const decisionLevel = 1

// chapterLevel is the deepest keyword level that numbered sections ("2.1 Scope") nest
// under: below a "Hoofdstuk 2", "2.1" is one level deeper than the chapter.
const chapterLevel = 4

// numberedHeading reports whether a numbered line reads as a section title rather than a
// numbered list item or sentence: at most 120 runes, not ending in sentence punctuation.
func numberedHeading(title string) bool {
	return utf8.RuneCountInString(title) <= 120 && !strings.ContainsAny(title[len(title)-1:], ".;:,")
}

// legalHeading returns the level and title of a Dutch (or English) legal or decision
// heading line; ok is false for other lines, including sentences that start with a
// keyword ("Artikel 5 is van toepassing" continues in lower case).
func legalHeading(body string) (level int, title string, ok bool) {
	if m := decisionRe.FindStringSubmatch(body); m != nil {
		return decisionLevel, strings.TrimSpace(body), true
	}
	m := keywordRe.FindStringSubmatch(body)
	if m == nil {
		return 0, "", false
	}
	if r, _ := utf8.DecodeRuneInString(m[4]); unicode.IsLower(r) || utf8.RuneCountInString(m[4]) > 120 {
		return 0, "", false
	}
	kw := m[2]
	if m[1] != "" {
		kw = m[1]
	}
	return keywordLevel[kw], strings.TrimSpace(body), true
}

// outline detects headings line by line.
func (h *HeadingChunker) outline(text string, lines []line) []OutlineEntry {
	var out []OutlineEntry
	prevHeading := false
	base := 0 // level of the last chapter-or-above keyword heading: numbered sections nest under it
	for i, l := range lines {
		if l.fence {
			prevHeading = false
			continue
		}
		body := strings.TrimRight(text[l.s:l.e], "\r")
		level, title := 0, ""
		if lead := leadByte(body); h.opts.Markdown && (lead == '#' || lead == '=' || lead == '-') {
			if lv, t, ok := atxHeading(body); lead == '#' && ok {
				level, title = lv, t
			} else if lead != '#' && i > 0 && !prevHeading && setextRe.MatchString(body) {
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
			if lv, t, ok := legalHeading(body); ok {
				level, title = lv, t
				if lv <= chapterLevel {
					base = lv
				}
			} else if m := numberedRe.FindStringSubmatch(body); m != nil && numberedHeading(m[2]) {
				level, title = strings.Count(m[1], ".")+1, strings.TrimSpace(body)
				if base > 0 {
					// "2.1" below "Hoofdstuk 2": the first number is the chapter's.
					level = base + max(1, level-1)
				}
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
	base := h.sp.indexed(text)
	out := make([]Chunk, 0, base.chunksCap(text))
	type frame struct {
		level int
		title string
	}
	var stack []frame
	var path []string
	section := func(s, e int) {
		before := len(out)
		sp, prefix := base, ""
		if h.opts.PathPrefix {
			var pn int
			prefix, pn = h.pathPrefix(path)
			if pn > 0 {
				cp := *base
				cp.max -= pn
				cp.overlap = min(cp.overlap, cp.max-1)
				sp = &cp
			}
		}
		out = h.section(sp, text, lines, s, e, out)
		for i := before; i < len(out); i++ {
			out[i].HeadingPath = path
			if prefix != "" {
				out[i].PathPrefix = prefix
				out[i].TokenCount = h.sp.sizer.Size(out[i].EmbedText(text))
			}
		}
	}
	section(0, firstStart(outline, len(text)))
	fold := -1         // start of the heading-only sections folded into the next one
	var extra []string // titles folded in that the next section's path lacks (a title)
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
		start := o.Start
		if fold >= 0 {
			start, path = fold, joinPath(extra, path)
		}
		if h.sp.minSize > 0 && i+1 < len(outline) && blank(text[o.End:end]) {
			if outline[i+1].Level > o.Level {
				fold = start // a heading-only section: into its first subsection
				continue
			}
			if i == 0 && blank(text[:o.Start]) {
				fold, extra = start, path // the document's title: into the next section
				continue
			}
		}
		fold, extra = -1, nil
		section(start, end)
	}
	return number(mergeSmall(text, out, h.sp.sizer, h.sp.max, h.sp.minSize)), nil
}

// joinPath returns the heading path extra followed by path, a title that ends extra and
// starts path kept once. extra is empty for a folded parent section (path holds it).
func joinPath(extra, path []string) []string {
	if len(extra) == 0 {
		return path
	}
	if len(path) > 0 && extra[len(extra)-1] == path[0] {
		path = path[1:]
	}
	return append(slices.Clip(extra), path...)
}

func firstStart(outline []OutlineEntry, n int) int {
	if len(outline) == 0 {
		return n
	}
	return outline[0].Start
}

// sepRowRe matches a Markdown table delimiter row such as |---|:--:|.
var sepRowRe = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// pathPrefix returns the PathPrefix line for a heading path and its size: the titles
// joined by " > " and a newline, outer titles dropped until it measures at most half the
// chunk size; "" and 0 when not even the innermost title fits.
func (h *HeadingChunker) pathPrefix(path []string) (string, int) {
	for k := 0; k < len(path); k++ {
		p := strings.Join(path[k:], " > ") + "\n"
		if n := h.sp.sizer.Size(p); 2*n <= h.sp.max {
			return p, n
		}
	}
	return "", 0
}

// section appends the chunks of the section [s, e), cut by sp: the whole section when it
// fits, else its tables row by row and the text between them split recursively.
func (h *HeadingChunker) section(sp *splitter, text string, lines []line, s, e int, out []Chunk) []Chunk {
	ts, te := trimSpan(text, s, e)
	if ts == te {
		return out
	}
	if n := sp.size(text, ts, te); n <= sp.max {
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
		// A Markdown table: header row l, separator row, then rows holding a pipe. A table
		// as the readers write one (reader.Builder.Table, e.g. a .md, HTML or DOCX table): a
		// block whose every line is a tab-separated row; its first row is the header.
		isBody := isRow
		headEnd := i + 1 // index of the last header line
		switch {
		case isRow(text, l) && sepRowRe.MatchString(text[lines[i+1].s:lines[i+1].e]) && !lines[i+1].fence:
		case tabTableAt(text, lines, i, s, e):
			isBody, headEnd = isTabRow, i
		default:
			continue
		}
		if textStart < l.s {
			segs = append(segs, seg{s: textStart, e: l.s})
		}
		sep := lines[headEnd]
		head := seg{s: l.s, e: min(sep.next, e), atomic: true}
		prefix := text[l.s:min(sep.next, e)]
		if !strings.HasSuffix(prefix, "\n") {
			prefix += "\n"
		}
		segs = append(segs, head)
		pn := sp.sizer.Size(prefix)
		j := headEnd + 1
		for ; j < len(lines) && lines[j].s < e && !lines[j].fence && isBody(text, lines[j]); j++ {
			row := seg{s: lines[j].s, e: min(lines[j].next, e), atomic: true, prefix: prefix}
			if _, te := trimSpan(text, row.s, row.e); pn+sp.size(text, row.s, te) > sp.max {
				// The header would push a row that fits on its own over the size: a chunk
				// starting with this row goes without it rather than being flagged Oversize.
				row.prefix = ""
			}
			segs = append(segs, row)
		}
		textStart = segs[len(segs)-1].e
		i = j - 1
	}
	if textStart < e {
		segs = append(segs, seg{s: textStart, e: e})
	}
	return sp.pack(text, segs, -1, out)
}

// isTabRow reports whether a line is a row of a table as reader.Builder.Table writes it:
// cells separated by tabs, at least one tab after the line's leading tabs (an empty first
// cell) and some text before it.
func isTabRow(text string, l line) bool {
	b := strings.TrimLeft(text[l.s:l.e], "\t")
	k := strings.IndexByte(b, '\t')
	return k > 0 && strings.TrimSpace(b[:k]) != "" && b[0] != ' '
}

// tabTableAt reports whether lines[i] starts a tab-separated table inside [s, e): it opens a
// block (the section's first line or after a blank line), and it and every following line
// of the block, two at least, are tab rows (isTabRow) outside code fences. Code indented
// with tabs is no table: its lines hold no tab after their text begins.
func tabTableAt(text string, lines []line, i, s, e int) bool {
	if i > 0 && lines[i-1].s >= s && strings.TrimSpace(text[lines[i-1].s:lines[i-1].e]) != "" {
		return false
	}
	n := 0
	for j := i; j < len(lines) && lines[j].s < e && strings.TrimSpace(text[lines[j].s:lines[j].e]) != ""; j++ {
		if lines[j].fence || !isTabRow(text, lines[j]) {
			return false
		}
		n++
	}
	return n >= 2
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
