package reader

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Builder accumulates a document's text in the package's common layout and records the
// outline, page boundaries and footnotes as it goes. Format readers feed it blocks in
// reading order and call Finish. The zero value is ready to use.
type Builder struct {
	buf      strings.Builder
	outline  []Heading
	pages    []Page
	pageOpen bool
	notes    []string
}

// Len returns the number of bytes of text written so far.
func (b *Builder) Len() int { return b.buf.Len() }

// CollapseSpace returns s with every run of Unicode white space replaced by one space,
// leading and trailing space removed, and invalid UTF-8 replaced by U+FFFD.
func CollapseSpace(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.Join(strings.Fields(s), " ")
}

// startBlock writes the blank-line separator before a new block (none before the first)
// and returns the offset where the block starts.
func (b *Builder) startBlock() int {
	if b.buf.Len() > 0 {
		b.buf.WriteString("\n\n")
	}
	start := b.buf.Len()
	if b.pageOpen {
		p := &b.pages[len(b.pages)-1]
		if p.Start == p.End && p.Start <= start {
			p.Start, p.End = start, start
		}
	}
	return start
}

func (b *Builder) endBlock() {
	if b.pageOpen {
		b.pages[len(b.pages)-1].End = b.buf.Len()
	}
}

// Heading writes a heading of the given level (clamped to at least 1) as its own block
// and adds it to the outline. A title that is empty after collapsing space is ignored.
func (b *Builder) Heading(level int, title string) {
	title = CollapseSpace(title)
	if title == "" {
		return
	}
	if level < 1 {
		level = 1
	}
	start := b.startBlock()
	b.buf.WriteString(title)
	b.endBlock()
	b.outline = append(b.outline, Heading{Level: level, Title: title, Start: start})
}

// Paragraph writes text, whitespace collapsed, as one block; empty text is ignored.
func (b *Builder) Paragraph(text string) {
	text = CollapseSpace(text)
	if text == "" {
		return
	}
	b.startBlock()
	b.buf.WriteString(text)
	b.endBlock()
}

// Code writes a code block as one block, its lines byte for byte (indentation, tabs and
// inner blank lines kept; invalid UTF-8 replaced by U+FFFD), fenced in the CommonMark way
// so that chunkers treat it as code (no heading inside it, cut between its lines): an
// opening fence of backticks (tildes when info holds a backtick) one longer than any run of
// that character in the code, at least three, followed by info (the language, e.g.
// "python"), then the code without its trailing line ends, then the closing fence. Code
// that is empty or only white space is ignored.
func (b *Builder) Code(info, code string) {
	if !utf8.ValidString(code) {
		code = strings.ToValidUTF8(code, "\uFFFD")
	}
	code = strings.TrimRight(code, "\n")
	for strings.HasPrefix(code, "\n") {
		code = code[1:]
	}
	if strings.TrimSpace(code) == "" {
		return
	}
	info = CollapseSpace(info)
	c := "`"
	if strings.Contains(info, c) {
		c = "~"
	}
	run, longest := 0, 0
	for i := 0; i < len(code); i++ {
		if code[i] == c[0] {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat(c, max(3, longest+1))
	b.startBlock()
	b.buf.WriteString(fence + info + "\n" + code + "\n" + fence)
	b.endBlock()
}

// Table writes rows as one block: one line per row, cells separated by a tab, each cell
// whitespace-collapsed, trailing empty cells dropped. Rows whose cells are all empty are
// left out.
func (b *Builder) Table(rows [][]string) {
	var lines []string
	for _, row := range rows {
		cells := make([]string, 0, len(row))
		empty := true
		for _, c := range row {
			c = CollapseSpace(c)
			if c != "" {
				empty = false
			}
			cells = append(cells, c)
		}
		if !empty {
			lines = append(lines, strings.TrimRight(strings.Join(cells, "\t"), "\t"))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.startBlock()
	b.buf.WriteString(strings.Join(lines, "\n"))
	b.endBlock()
}

// AddNote records a footnote body and returns its marker "[n]", n counting from 1 in
// the order markers are added; the reader writes the marker where the note is referenced.
// Finish appends the bodies as "[n] body" paragraphs.
func (b *Builder) AddNote(body string) string {
	b.notes = append(b.notes, CollapseSpace(body))
	return NoteMarker(len(b.notes))
}

// NoteMarker returns the text that marks footnote n: "[n]".
func NoteMarker(n int) string { return "[" + strconv.Itoa(n) + "]" }

// StartPage begins page number (1-based); the blocks written until the next StartPage or
// Finish belong to it. A page without text gets an empty range.
func (b *Builder) StartPage(number int) {
	off := b.buf.Len()
	if b.buf.Len() > 0 {
		off += 2 // the separator the next block will write
	}
	b.pages = append(b.pages, Page{Number: number, Start: off, End: off})
	b.pageOpen = true
}

// Finish appends the footnote bodies, closes the outline's sections and returns the
// document with the given media type.
func (b *Builder) Finish(mediaType string) Document {
	for i, n := range b.notes {
		b.Paragraph(NoteMarker(i+1) + " " + n)
	}
	text := b.buf.String()
	SetSectionEnds(b.outline, len(text))
	for i := range b.pages {
		p := &b.pages[i]
		if p.Start > len(text) {
			p.Start = len(text)
		}
		if p.End < p.Start {
			p.End = p.Start
		}
	}
	return Document{MediaType: mediaType, Text: text, Outline: b.outline, Pages: b.pages}
}

// SetSectionEnds sets each heading's End to the Start of the next heading of the same or
// a higher level, or to textLen; outline must be sorted by Start.
func SetSectionEnds(outline []Heading, textLen int) {
	for i := range outline {
		outline[i].End = textLen
		for _, next := range outline[i+1:] {
			if next.Level <= outline[i].Level {
				outline[i].End = next.Start
				break
			}
		}
	}
}
