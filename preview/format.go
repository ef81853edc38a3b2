package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ragops/ragops/reader"
)

// HeadingSeparator joins the titles of a heading path in the table.
const HeadingSeparator = " > "

// header writes the line naming the document of rs (one document, one result per
// strategy): media type, text length, pages, the reader's headings and, where a strategy
// cuts at other headings (docchunk.Headings: a Heading strategy's numbered sections or
// patterns), how many it cuts at, and the text's encoding when it was not UTF-8.
func header(w io.Writer, rs ...Result) {
	r := rs[0]
	pages := "no pages"
	if n := len(r.Document.Doc.Pages); n > 0 {
		pages = fmt.Sprintf("%d pages", n)
	}
	if o := r.Document.Doc.OCR; o != nil && o.Pages > 0 {
		pages += fmt.Sprintf(" (%d read by OCR, %d second pass, %d low confidence)", o.Pages, o.SecondPass, o.LowConfidence)
	}
	headings := fmt.Sprintf("%d headings", len(r.Document.Doc.Outline))
	var cuts []string
	for _, x := range rs {
		if x.Headings != len(r.Document.Doc.Outline) {
			cuts = append(cuts, fmt.Sprintf("strategy %s cuts at %d", x.Strategy.Name, x.Headings))
		}
	}
	if len(cuts) > 0 {
		headings += " (" + strings.Join(cuts, ", ") + ")"
	}
	if e := r.Document.Doc.Encoding; e != "" {
		headings += ", decoded from " + e
		if e == reader.EncodingWindows1252 {
			headings += " (the file is not valid UTF-8)"
		}
	}
	fmt.Fprintf(w, "%s: %s, %d bytes of text, %s, %s\n", r.Document.Name(), r.Document.Doc.MediaType,
		len(r.Document.Doc.Text), pages, headings)
}

// unitNote says how sizes are counted.
func unitNote(r Result) string {
	switch {
	case r.Unit == UnitWords:
		return "sizes in words: spec.unit is Tokens but no --model was given (a build counts the model's tokens)"
	case r.ModelPositions > 0 && r.Unit == UnitCharacters:
		return fmt.Sprintf("sizes in characters; TOKENS counted by the model's tokenizer (%d positions)", r.ModelPositions)
	case r.ModelPositions > 0:
		return fmt.Sprintf("sizes in the model's tokens (%d positions)", r.ModelPositions)
	default:
		return "sizes in characters"
	}
}

// pathPrefixNote says, for a strategy that embeds each chunk's heading path line in front
// of it, that the sizes count that line, and shows the first chunk's.
func pathPrefixNote(r Result) string {
	for _, c := range r.Chunks {
		if c.PathPrefix != "" {
			return fmt.Sprintf("; sizes include the heading path line embedded before each chunk (e.g. %q)", c.PathPrefix)
		}
	}
	return ""
}

// WriteTable writes r as a table, one row per chunk, followed by the late chunking
// windows (if any) and the summary line.
func WriteTable(w io.Writer, r Result) error {
	header(w, r)
	fmt.Fprintf(w, "strategy %s; %s%s\n", r.Strategy, unitNote(r), pathPrefixNote(r))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cols := []string{"#", "SPAN", "PAGES", strings.ToUpper(r.Unit)}
	withTokens := r.ModelPositions > 0 && r.Unit != UnitTokens
	if withTokens {
		cols = append(cols, "TOKENS")
	}
	if r.Windows != nil {
		cols = append(cols, "WINDOWS")
	}
	cols = append(cols, "HEADING PATH", "FIRST WORDS … LAST WORDS")
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, c := range r.Chunks {
		size := strconv.Itoa(c.Size)
		if c.Tokens != nil && !withTokens {
			size = strconv.Itoa(*c.Tokens)
		}
		size += flags(c)
		row := []string{strconv.Itoa(c.Ordinal), spanString(c), pageString(c), size}
		if withTokens {
			row = append(row, strconv.Itoa(*c.Tokens))
		}
		if r.Windows != nil {
			row = append(row, intsString(c.Windows))
		}
		row = append(row, headingString(c.HeadingPath), edgeString(c))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, win := range r.Windows {
		fmt.Fprintf(w, "window %d: tokens [%d, %d), bytes [%d, %d)\n", i, win.TokenStart, win.TokenEnd, win.Start, win.End)
	}
	_, err := fmt.Fprintln(w, summaryString(r.Summary, r.ModelPositions))
	return err
}

// flags marks an oversize (!), truncated (✂) or empty (∅) chunk after its size.
func flags(c Chunk) string {
	var b strings.Builder
	if c.Oversize {
		b.WriteString(" !oversize")
	}
	if c.Truncated {
		b.WriteString(" !truncated")
	}
	if c.Empty {
		b.WriteString(" !empty")
	}
	return b.String()
}

func summaryString(s Summary, positions int) string {
	b := fmt.Sprintf("chunks %d; %s mean %.1f, min %d, max %d; oversize %d; empty %d", s.Chunks, s.Unit, s.Mean, s.Min, s.Max, s.Oversize, s.Empty)
	if positions > 0 {
		b += fmt.Sprintf("; truncated (over %d positions) %d", positions, s.Truncated)
	}
	return b
}

func spanString(c Chunk) string {
	if len(c.Spans) == 0 {
		return fmt.Sprintf("[%d, %d)", c.Start, c.End)
	}
	parts := make([]string, len(c.Spans))
	for i, s := range c.Spans {
		parts[i] = fmt.Sprintf("[%d, %d)", s.Start, s.End)
	}
	return strings.Join(parts, " ")
}

func pageString(c Chunk) string {
	switch {
	case c.PageStart == 0:
		return "-"
	case c.PageStart == c.PageEnd:
		return strconv.Itoa(c.PageStart)
	default:
		return fmt.Sprintf("%d-%d", c.PageStart, c.PageEnd)
	}
}

func headingString(path []string) string {
	if len(path) == 0 {
		return "-"
	}
	return strings.Join(path, HeadingSeparator)
}

func edgeString(c Chunk) string {
	if c.FirstWords == c.LastWords {
		return strconv.Quote(c.FirstWords)
	}
	return strconv.Quote(c.FirstWords) + " … " + strconv.Quote(c.LastWords)
}

func intsString(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

// JSONChunk is one line of the JSON lines output: a Chunk with the document, strategy and
// unit it belongs to.
type JSONChunk struct {
	// File is the file read; Document the corpus "_id" (corpus.jsonl files only).
	File     string `json:"file"`
	Document string `json:"document,omitempty"`
	// MediaType is the sniffed media type the file was read as.
	MediaType string `json:"mediaType"`
	// Strategy is the ChunkingStrategy's name.
	Strategy string `json:"strategy"`
	// Unit is what Size counts (tokens, characters or words).
	Unit string `json:"unit"`
	Chunk
	// WindowSpans are the byte spans [start, end) of the windows in Windows, in that order.
	WindowSpans [][2]int `json:"windowSpans,omitempty"`
}

// WriteJSON writes r's chunks as JSON lines (JSONChunk).
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range r.Chunks {
		line := JSONChunk{File: r.Document.File, Document: r.Document.ID, MediaType: r.Document.Doc.MediaType,
			Strategy: r.Strategy.Name, Unit: r.Unit, Chunk: c}
		for _, wi := range c.Windows {
			line.WindowSpans = append(line.WindowSpans, [2]int{r.Windows[wi].Start, r.Windows[wi].End})
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// CompareStats counts the chunk boundaries (start offsets) of two results.
type CompareStats struct {
	// Starts is the number of distinct chunk start offsets in A and in B.
	Starts [2]int
	// Shared is the number of start offsets found in both.
	Shared int
}

// WriteCompare writes a and b, two strategies applied to the same document, side by side:
// one row per offset where a chunk of either starts, in text order, with the line number
// and the words at that offset. A cell names the chunk that starts there (ordinal, size,
// innermost heading), "│" when the offset lies inside a chunk of that strategy, and is
// empty between its chunks.
func WriteCompare(w io.Writer, a, b Result) (CompareStats, error) {
	var st CompareStats
	if a.Document.Doc.Text != b.Document.Doc.Text {
		return st, fmt.Errorf("compare: %s and %s are different documents", a.Document.Name(), b.Document.Name())
	}
	header(w, a, b)
	fmt.Fprintf(w, "A: strategy %s; %s%s\n", a.Strategy, unitNote(a), pathPrefixNote(a))
	fmt.Fprintf(w, "B: strategy %s; %s%s\n", b.Strategy, unitNote(b), pathPrefixNote(b))
	starts := map[int][2][]Chunk{}
	for side, r := range []Result{a, b} {
		for _, c := range r.Chunks {
			e := starts[c.Start]
			if len(e[side]) == 0 {
				st.Starts[side]++
			}
			e[side] = append(e[side], c)
			starts[c.Start] = e
		}
	}
	offsets := make([]int, 0, len(starts))
	for off, e := range starts {
		offsets = append(offsets, off)
		if len(e[0]) > 0 && len(e[1]) > 0 {
			st.Shared++
		}
	}
	sort.Ints(offsets)
	text := a.Document.Doc.Text
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OFFSET\tLINE\tA "+a.Strategy.Name+"\tB "+b.Strategy.Name+"\tTEXT AT OFFSET")
	for _, off := range offsets {
		e := starts[off]
		row := []string{strconv.Itoa(off), strconv.Itoa(1 + strings.Count(text[:off], "\n"))}
		for side, r := range []Result{a, b} {
			row = append(row, compareCell(e[side], r, off))
		}
		first, _ := edgeWords(text[off:min(len(text), off+200)], EdgeWords)
		row = append(row, strconv.Quote(first))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return st, err
	}
	fmt.Fprintf(w, "A: %s\n", summaryString(a.Summary, a.ModelPositions))
	fmt.Fprintf(w, "B: %s\n", summaryString(b.Summary, b.ModelPositions))
	_, err := fmt.Fprintf(w, "chunk starts: A %d, B %d, shared %d\n", st.Starts[0], st.Starts[1], st.Shared)
	return st, err
}

// compareCell describes the chunks of r starting at off, or whether off lies inside one.
func compareCell(here []Chunk, r Result, off int) string {
	if len(here) == 0 {
		for _, c := range r.Chunks {
			if c.Start < off && off < c.End {
				return "│"
			}
		}
		return ""
	}
	parts := make([]string, len(here))
	for i, c := range here {
		n, unit := c.Size, r.Unit
		if c.Tokens != nil {
			n, unit = *c.Tokens, UnitTokens
		}
		s := fmt.Sprintf("#%d %d %s%s", c.Ordinal, n, unitAbbrev(unit), flags(c))
		if len(c.HeadingPath) > 0 {
			s += " · " + clip(c.HeadingPath[len(c.HeadingPath)-1], 32)
		}
		parts[i] = s
	}
	return strings.Join(parts, "; ")
}

func unitAbbrev(unit string) string {
	switch unit {
	case UnitTokens:
		return "tok"
	case UnitCharacters:
		return "chars"
	}
	return unit
}

// clip shortens s to at most n runes, ending in "…" when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
