package pdf

import (
	"cmp"
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/responses"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/ocr"
)

// line is one text line as PDFium's text page gives it.
type line struct {
	text string
	size float64 // font size in points of most of the line's characters
	bold bool    // every non-space character is set in a bold font
	base float64 // baseline of the first character, in points from the page bottom
	// smallDigits: the line holds only digits set smaller than the text around it (a
	// footnote number on a line of its own).
	smallDigits bool
	// block: a paragraph recognised by OCR, written as a block of its own (no font, so
	// never a heading by typography nor joined to its neighbours).
	block bool
}

// pchar is one character with its font size (points, rounded to 0.5) and weight.
type pchar struct {
	r    rune
	size float64
	bold bool
}

func allSpace(cs []pchar) bool {
	for _, c := range cs {
		if c.r != ' ' {
			return false
		}
	}
	return true
}

// superscriptRatio: digits set at most this fraction of the line's font size, right
// after a non-space character, are a footnote reference and become "[n]".
const superscriptRatio = 0.75

// makeLine builds a line from its characters; ok is false for a blank line.
func makeLine(cs []pchar, base float64) (line, bool) {
	count := map[float64]int{}
	bold := true
	n := 0
	for _, c := range cs {
		if c.r != ' ' {
			count[c.size]++
			bold = bold && c.bold
			n++
		}
	}
	if n == 0 {
		return line{}, false
	}
	l := line{base: base, bold: bold}
	best := 0
	for s, k := range count {
		if k > best || k == best && s > l.size {
			l.size, best = s, k
		}
	}
	var sb strings.Builder
	digitsOnly := true
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		if c.r != ' ' && !unicode.IsDigit(c.r) {
			digitsOnly = false
		}
		if unicode.IsDigit(c.r) && c.size <= superscriptRatio*l.size && i > 0 && cs[i-1].r != ' ' && !unicode.IsDigit(cs[i-1].r) {
			j := i
			for j < len(cs) && unicode.IsDigit(cs[j].r) && cs[j].size <= superscriptRatio*l.size {
				j++
			}
			sb.WriteString("[" + string(runesOf(cs[i:j])) + "]")
			i = j - 1
			continue
		}
		sb.WriteRune(c.r)
	}
	l.text = strings.TrimSpace(sb.String())
	l.smallDigits = digitsOnly
	return l, true
}

func runesOf(cs []pchar) []rune {
	rs := make([]rune, len(cs))
	for i, c := range cs {
		rs[i] = c.r
	}
	return rs
}

// noteLines joins a line that holds only a small footnote number to the next line as
// "[n] text", the layout footnote bodies have in every reader.
func noteLines(lines []line) []line {
	count := map[float64]int{}
	for _, l := range lines {
		count[l.size] += len(l.text)
	}
	body, best := 0.0, 0
	for s, n := range count {
		if n > best {
			body, best = s, n
		}
	}
	out := lines[:0]
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l.smallDigits && l.size <= superscriptRatio*body && i+1 < len(lines) {
			next := lines[i+1]
			next.text = "[" + l.text + "] " + next.text
			out = append(out, next)
			i++
			continue
		}
		out = append(out, l)
	}
	return out
}

// fontCache remembers the font size and weight of the last text object seen: characters
// of one text object share them, so PDFium is asked only when the object changes.
type fontCache struct {
	obj    references.FPDF_PAGEOBJECT
	valid  bool
	size   float64
	isBold bool
}

// boldName reports whether a font name names a bold face ("ABCDEF+DejaVuSans-Bold").
func boldName(name string) bool {
	name = strings.ToLower(name)
	for _, w := range []string{"bold", "black", "heavy", "demi"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// style returns character i's font size in points (rounded to 0.5) and whether its font
// is bold (by name, or the ForceBold flag: PDF 1.7 section 5.7.1).
func (f *fontCache) style(inst pdfium.Pdfium, tp references.FPDF_TEXTPAGE, i int) (float64, bool, error) {
	o, err := inst.FPDFText_GetTextObject(&requests.FPDFText_GetTextObject{TextPage: tp, Index: i})
	if err == nil && f.valid && o.TextObject == f.obj {
		return f.size, f.isBold, nil
	}
	f.valid = err == nil
	if f.valid {
		f.obj = o.TextObject
	}
	fs, err := inst.FPDFText_GetFontSize(&requests.FPDFText_GetFontSize{TextPage: tp, Index: i})
	if err != nil {
		return 0, false, err
	}
	f.size = math.Round(fs.FontSize*2) / 2
	f.isBold = false
	if fi, err := inst.FPDFText_GetFontInfo(&requests.FPDFText_GetFontInfo{TextPage: tp, Index: i}); err == nil {
		f.isBold = boldName(fi.FontName) || fi.Flags&(1<<18) != 0
	}
	return f.size, f.isBold, nil
}

func (l line) key() styleKey { return styleKey{l.size, l.bold} }

type styleKey struct {
	size float64
	bold bool
}

// extract reads every page's lines (by OCR where needed), then lays them out with the outline.
func (r *Reader) extract(ctx context.Context, inst pdfium.Pdfium, open *requests.OpenDocument, mediaType string) (reader.Document, error) {
	d, err := openDocument(inst, open)
	if err != nil {
		return reader.Document{}, openError(err, mediaType)
	}
	defer d.close()
	pc, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: d.doc})
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "cannot count pages")
	}
	if pc.PageCount == 0 {
		return reader.Document{}, reader.Skip(reader.Empty, mediaType, nil, "PDF has no pages")
	}
	pages := make([][]line, pc.PageCount)
	chars, images := 0, 0
	mode := ocr.Never
	if r.ocr != nil {
		mode = r.ocr.Options().Mode
	} else if r.ocrErr != nil {
		mode = ocr.Auto
	}
	var need []int
	for i := range pages {
		if err := ctx.Err(); err != nil {
			return reader.Document{}, err
		}
		if err := d.refresh(); err != nil {
			return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "reopen before page %d", i+1)
		}
		lines, n, imgs, err := readPage(inst, d.doc, i)
		if err != nil {
			return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "page %d", i+1)
		}
		pages[i] = dropPageNumber(lines, i+1)
		chars += n
		images += imgs
		if needsOCR(mode, n, imgs) {
			need = append(need, i)
		}
	}
	var stats *reader.OCRStats
	if len(need) > 0 {
		if stats, err = r.ocrPages(ctx, d, pages, need, mediaType); err != nil {
			return reader.Document{}, err
		}
		chars = 0
		for _, p := range pages {
			for _, l := range p {
				chars += len(l.text)
			}
		}
	}
	if chars == 0 && stats == nil {
		if images > 0 {
			return reader.Document{}, reader.Skip(reader.NoTextLayer, mediaType, nil,
				"%d pages, %d images and no text: a scan without OCR layer", len(pages), images)
		}
		return reader.Document{}, reader.Skip(reader.Empty, mediaType, nil, "%d pages without text or images", len(pages))
	}
	var out reader.Document
	if err := d.refresh(); err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "reopen for the outline")
	}
	bm, err := inst.GetBookmarks(&requests.GetBookmarks{Document: d.doc})
	if err == nil && len(bm.Bookmarks) > 0 {
		out = layoutWithBookmarks(pages, bm.Bookmarks, mediaType)
	} else {
		out = layoutWithFonts(pages, mediaType)
	}
	out.OCR = stats
	docInfo(inst, d.doc, &out)
	return out, nil
}

// docInfo sets out's metadata from the document information dictionary (ISO 32000-1,
// 14.3.3): Title and Author as written, CreationDate and ModDate as RFC 3339 when they
// parse as PDF dates (see pdfDate). A tag PDFium cannot read sets nothing.
func docInfo(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, out *reader.Document) {
	get := func(tag string) string {
		r, err := inst.FPDF_GetMetaText(&requests.FPDF_GetMetaText{Document: doc, Tag: tag})
		if err != nil {
			return ""
		}
		return r.Value
	}
	out.SetMeta(reader.MetaTitle, get("Title"))
	out.SetMeta(reader.MetaAuthor, get("Author"))
	out.SetMeta(reader.MetaCreated, pdfDate(get("CreationDate")))
	out.SetMeta(reader.MetaModified, pdfDate(get("ModDate")))
}

// pdfDateRE matches a PDF date (ISO 32000-1, 7.9.4): "D:YYYYMMDDHHmmSSOHH'mm", every part
// after the year optional, O one of Z, + or -; the apostrophes are optional and often
// misplaced (a trailing one after Z, as some producers write).
var pdfDateRE = regexp.MustCompile(`^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:(Z)|([+-])(\d{2})'?(\d{2})?)?'?$`)

// pdfDate returns a PDF date as RFC 3339; a missing part takes its smallest value and a
// missing zone is read as UTC. A value that does not parse is returned trimmed, as written.
func pdfDate(s string) string {
	s = strings.TrimSpace(s)
	m := pdfDateRE.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	num := func(i, def int) int {
		if m[i] == "" {
			return def
		}
		v, _ := strconv.Atoi(m[i])
		return v
	}
	loc := time.UTC
	if m[8] != "" {
		off := (num(9, 0)*60 + num(10, 0)) * 60
		if m[8] == "-" {
			off = -off
		}
		loc = time.FixedZone("", off)
	}
	mo, d, h, mi, sec := num(2, 1), num(3, 1), num(4, 0), num(5, 0), num(6, 0)
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return s
	}
	return time.Date(num(1, 0), time.Month(mo), d, h, mi, sec, 0, loc).Format(time.RFC3339)
}

// readPage returns a page's lines, its character count (generated characters excluded)
// and, when it has no characters, its number of image objects.
func readPage(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, index int) ([]line, int, int, error) {
	pg, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc, Index: index})
	if err != nil {
		return nil, 0, 0, err
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: pg.Page})
	page := requests.Page{ByReference: &pg.Page}
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: page})
	if err != nil {
		return nil, 0, 0, err
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	cc, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil {
		return nil, 0, 0, err
	}
	var (
		lines []line
		cur   []pchar
		base  float64 // baseline of the line's first character
		real  int
		font  fontCache
	)
	flush := func() {
		if l, ok := makeLine(cur, base); ok {
			lines = append(lines, l)
		}
		cur = cur[:0]
	}
	for i := 0; i < cc.Count; i++ {
		u, err := inst.FPDFText_GetUnicode(&requests.FPDFText_GetUnicode{TextPage: tp.TextPage, Index: i})
		if err != nil {
			return nil, 0, 0, err
		}
		r := rune(u.Unicode)
		switch {
		case r == '\n':
			flush()
			continue
		case r == '\r', r == 0, r == 0xFFFE, r == 0xFFFF, r < 0x20 && r != '\t':
			continue
		}
		if unicode.IsSpace(r) {
			cur = append(cur, pchar{r: ' '})
			continue
		}
		real++
		size, bold, err := font.style(inst, tp.TextPage, i)
		if err != nil {
			return nil, 0, 0, err
		}
		if len(cur) == 0 || allSpace(cur) {
			if o, err := inst.FPDFText_GetCharOrigin(&requests.FPDFText_GetCharOrigin{TextPage: tp.TextPage, Index: i}); err == nil {
				base = o.Y
			}
		}
		cur = append(cur, pchar{r: r, size: size, bold: bold})
	}
	flush()
	lines = noteLines(lines)
	images := 0
	if real == 0 {
		images = countImages(inst, page)
	}
	return lines, real, images, nil
}

func countImages(inst pdfium.Pdfium, page requests.Page) int {
	oc, err := inst.FPDFPage_CountObjects(&requests.FPDFPage_CountObjects{Page: page})
	if err != nil {
		return 0
	}
	n := 0
	for i := 0; i < oc.Count; i++ {
		obj, err := inst.FPDFPage_GetObject(&requests.FPDFPage_GetObject{Page: page, Index: i})
		if err != nil {
			continue
		}
		t, err := inst.FPDFPageObj_GetType(&requests.FPDFPageObj_GetType{PageObject: obj.PageObject})
		if err == nil && t.Type == enums.FPDF_PAGEOBJ_IMAGE {
			n++
		}
	}
	return n
}

var pageNumberLine = regexp.MustCompile(`(?i)^[-–—\s]*(?:pagina|page|blz\.?|p\.)?\s*(\d+)\s*(?:(?:/|van|of)\s*\d+)?[-–—\s]*$`)

// dropPageNumber removes a first or last line that holds only the page's own number.
func dropPageNumber(lines []line, number int) []line {
	is := func(l line) bool {
		m := pageNumberLine.FindStringSubmatch(l.text)
		return m != nil && m[1] == strconv.Itoa(number)
	}
	if n := len(lines); n > 0 && is(lines[n-1]) {
		lines = lines[:n-1]
	}
	if len(lines) > 0 && is(lines[0]) {
		lines = lines[1:]
	}
	return lines
}

// continues reports whether next continues prev's paragraph: same style and the baseline
// step at most about one and a half times the font size.
func continues(prev, next line) bool {
	if prev.block || next.block || prev.key() != next.key() {
		return false
	}
	step := prev.base - next.base
	return step >= -0.2*prev.size && step <= 1.5*prev.size
}

// paragraphs groups a page's lines; isHeading lines always stand alone.
func paragraphs(lines []line, isHeading func(line) bool) [][]line {
	var out [][]line
	for i, l := range lines {
		if i > 0 && !isHeading(l) && !isHeading(lines[i-1]) && continues(lines[i-1], l) {
			out[len(out)-1] = append(out[len(out)-1], l)
			continue
		}
		out = append(out, []line{l})
	}
	return out
}

func joinText(ls []line) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.text
	}
	return strings.Join(parts, " ")
}

// layoutWithFonts writes the pages and infers headings from font size and weight.
func layoutWithFonts(pages [][]line, mediaType string) reader.Document {
	count := map[float64]int{}
	for _, p := range pages {
		for _, l := range p {
			if !l.block {
				count[l.key().size] += len(l.text)
			}
		}
	}
	body, best := 0.0, 0
	for s, n := range count {
		if n > best || n == best && s < body {
			body, best = s, n
		}
	}
	// A line is a heading candidate when set clearly larger than body text, or bold at
	// body size; bold body-size lines must also stand apart (checked below).
	candidate := func(l line) bool {
		if l.block || len(l.text) > 200 || !hasLetter(l.text) {
			return false
		}
		k := l.key()
		return k.size >= body*1.1 && k.size >= body+1 || k.bold && math.Abs(k.size-body) < 1
	}
	heading := map[[2]int]bool{} // page, line index
	for pi, p := range pages {
		for li, l := range p {
			if !candidate(l) {
				continue
			}
			if l.key().size < body*1.1 {
				// Bold at body size: a heading only when not inside a paragraph of
				// the same style (the lines around it are another style or far away).
				if li > 0 && continues(p[li-1], l) && !candidate(p[li-1]) ||
					li+1 < len(p) && continues(l, p[li+1]) && !candidate(p[li+1]) {
					continue
				}
			}
			heading[[2]int{pi, li}] = true
		}
	}
	var keys []styleKey
	for pi, p := range pages {
		for li, l := range p {
			if heading[[2]int{pi, li}] && !slices.Contains(keys, l.key()) {
				keys = append(keys, l.key())
			}
		}
	}
	slices.SortFunc(keys, func(a, b styleKey) int {
		if c := cmp.Compare(b.size, a.size); c != 0 {
			return c
		}
		if a.bold == b.bold {
			return 0
		}
		if a.bold {
			return -1
		}
		return 1
	})
	b := &reader.Builder{}
	for pi, p := range pages {
		b.StartPage(pi + 1)
		var cur []line
		curHeading := false
		emit := func() {
			if len(cur) == 0 {
				return
			}
			if curHeading {
				b.Heading(slices.Index(keys, cur[0].key())+1, joinText(cur))
			} else {
				b.Paragraph(joinText(cur))
			}
			cur = nil
		}
		for li, l := range p {
			h := heading[[2]int{pi, li}]
			if len(cur) > 0 && h == curHeading && continues(cur[len(cur)-1], l) && (!h || len(cur) < 3) {
				cur = append(cur, l)
				continue
			}
			emit()
			cur, curHeading = []line{l}, h
		}
		emit()
	}
	return b.Finish(mediaType)
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

type flatBookmark struct {
	level int
	title string
	page  int // 0-based; -1 when unknown
}

func flatten(bms []responses.GetBookmarksBookmark, level int, out *[]flatBookmark) {
	for _, bm := range bms {
		page := -1
		if bm.DestInfo != nil {
			page = bm.DestInfo.PageIndex
		}
		*out = append(*out, flatBookmark{level: level, title: reader.CollapseSpace(bm.Title), page: page})
		flatten(bm.Children, level+1, out)
	}
}

// layoutWithBookmarks writes the pages as paragraphs and places each bookmark where its
// title occurs in the text of its destination page, at or after the previous heading.
func layoutWithBookmarks(pages [][]line, bms []responses.GetBookmarksBookmark, mediaType string) reader.Document {
	b := &reader.Builder{}
	never := func(line) bool { return false }
	for pi, p := range pages {
		b.StartPage(pi + 1)
		for _, para := range paragraphs(p, never) {
			b.Paragraph(joinText(para))
		}
	}
	doc := b.Finish(mediaType)
	var flat []flatBookmark
	flatten(bms, 1, &flat)
	squeezed, offsets := squeeze(doc.Text)
	pos := 0
	for _, bm := range flat {
		if bm.title == "" {
			continue
		}
		from := pos
		if bm.page >= 0 && bm.page < len(doc.Pages) && doc.Pages[bm.page].Start > from {
			from = doc.Pages[bm.page].Start
		}
		start := from
		needle, _ := squeeze(bm.title)
		k := sortSearch(offsets, from)
		if i := strings.Index(squeezed[k:], needle); i >= 0 {
			start = offsets[k+i]
			// Headings start their line; a title found mid-line keeps its own offset.
			if nl := strings.LastIndexByte(doc.Text[:start], '\n'); nl+1 >= from {
				start = nl + 1
			}
		}
		doc.Outline = append(doc.Outline, reader.Heading{Level: bm.level, Title: bm.title, Start: start})
		pos = start
	}
	reader.SetSectionEnds(doc.Outline, len(doc.Text))
	return doc
}

// squeeze returns s without white space and, for each byte of the result, its offset in s.
func squeeze(s string) (string, []int) {
	var sb strings.Builder
	offsets := make([]int, 0, len(s))
	for i, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		n := sb.Len()
		sb.WriteRune(r)
		for j := n; j < sb.Len(); j++ {
			offsets = append(offsets, i+j-n)
		}
	}
	return sb.String(), offsets
}

// sortSearch returns the first index k with offsets[k] >= off.
func sortSearch(offsets []int, off int) int {
	k, _ := slices.BinarySearch(offsets, off)
	return k
}
