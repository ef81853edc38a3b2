package ocr

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Word is one word of Tesseract's TSV output (level 5 rows).
type Word struct {
	// Page, Block, Paragraph and Line number the word's place in Tesseract's layout.
	Page, Block, Paragraph, Line int
	// Left, Top, Width, Height are the bounding box in pixels.
	Left, Top, Width, Height int
	// Confidence is 0-100.
	Confidence float64
	Text       string
}

// ParseTSV reads Tesseract's TSV output (a header row, then level, page_num, block_num,
// par_num, line_num, word_num, left, top, width, height, conf, text) and returns its words
// with text, in order. Rows of other levels and words of blank text are left out.
// Errors: a header or row of another shape.
func ParseTSV(data []byte) ([]Word, error) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) == 0 || !bytes.HasPrefix(lines[0], []byte("level\t")) {
		return nil, fmt.Errorf("ocr: tesseract TSV output without header")
	}
	var words []Word
	for n, l := range lines[1:] {
		l = bytes.TrimRight(l, "\r")
		if len(l) == 0 {
			continue
		}
		f := strings.Split(string(l), "\t")
		if len(f) != 12 {
			return nil, fmt.Errorf("ocr: tesseract TSV row %d has %d fields, want 12", n+2, len(f))
		}
		if f[0] != "5" || strings.TrimSpace(f[11]) == "" {
			continue
		}
		var iv [10]int
		for i := range 10 {
			v, err := strconv.Atoi(f[i])
			if err != nil {
				return nil, fmt.Errorf("ocr: tesseract TSV row %d field %d: %w", n+2, i+1, err)
			}
			iv[i] = v
		}
		conf, err := strconv.ParseFloat(f[10], 64)
		if err != nil {
			return nil, fmt.Errorf("ocr: tesseract TSV row %d confidence: %w", n+2, err)
		}
		words = append(words, Word{Page: iv[1], Block: iv[2], Paragraph: iv[3], Line: iv[4],
			Left: iv[6], Top: iv[7], Width: iv[8], Height: iv[9], Confidence: max(conf, 0), Text: f[11]})
	}
	return words, nil
}

// headingLineRatio: a line narrower than this fraction of the widest other line of its
// paragraph can stand on its own (a heading or label set above its text).
const headingLineRatio = 0.5

// Blocks groups words into paragraphs (Tesseract's page, block and paragraph numbers),
// each line's words joined by a space and the lines of a paragraph by a space. Tesseract
// sometimes puts a heading in the paragraph it heads, or in the paragraph before it, and
// the Heading strategy finds headings line by line; so a line of a paragraph of several
// lines becomes a block of its own when it is narrower than half the widest other line,
// does not end in punctuation (".,;:") and starts the paragraph or follows a line that ends
// a sentence (".!?:;"). A speck read as an opening quote or bullet before a capital at the
// start of a line ("„Artikel 1") is dropped when the line has no closing quote.
func Blocks(words []Word) []string {
	type ln struct {
		text        []string
		left, right int
	}
	var out []string
	var para []ln
	flush := func() {
		if len(para) == 0 {
			return
		}
		texts := make([]string, len(para))
		for i, l := range para {
			texts[i] = strings.Join(l.text, " ")
		}
		var cur []string
		for i, l := range para {
			widest := 0
			for j, o := range para {
				if j != i {
					widest = max(widest, o.right-o.left)
				}
			}
			t := texts[i]
			alone := len(para) > 1 && float64(l.right-l.left) < headingLineRatio*float64(widest) &&
				!strings.ContainsAny(t[len(t)-1:], ".,;:") &&
				(i == 0 || strings.ContainsAny(texts[i-1][len(texts[i-1])-1:], ".!?:;"))
			if !alone {
				cur = append(cur, t)
				continue
			}
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, " "))
				cur = nil
			}
			out = append(out, t)
		}
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
		}
		para = para[:0]
	}
	for i, w := range words {
		if i == 0 || w.Page != words[i-1].Page || w.Block != words[i-1].Block || w.Paragraph != words[i-1].Paragraph {
			flush()
		}
		if i == 0 || len(para) == 0 || w.Line != words[i-1].Line {
			para = append(para, ln{left: w.Left, right: w.Left + w.Width})
		}
		l := &para[len(para)-1]
		text := w.Text
		if len(l.text) == 0 {
			text = stripSpeck(text, words[i:])
		}
		if text == "" {
			continue
		}
		l.text = append(l.text, text)
		l.left, l.right = min(l.left, w.Left), max(l.right, w.Left+w.Width)
	}
	flush()
	return out
}

// speckRunes are the marks a speck of dust at the start of a line is often read as.
const speckRunes = "„‚\"'‘’“”•·|~_«»"

// stripSpeck drops leading speck marks from word, the first of a line, when a capital
// letter follows them and the rest of the line (rest, starting with word) holds no
// closing quote that would pair with an opening one.
func stripSpeck(word string, rest []Word) string {
	trimmed := strings.TrimLeft(word, speckRunes)
	if trimmed == word || trimmed == "" {
		return word
	}
	if r, _ := utf8.DecodeRuneInString(trimmed); !unicode.IsUpper(r) {
		return word
	}
	for _, w := range rest {
		if w.Line != rest[0].Line || w.Paragraph != rest[0].Paragraph || w.Block != rest[0].Block {
			break
		}
		if strings.ContainsAny(w.Text, "\"”’»") && w.Text != word {
			return word
		}
	}
	return trimmed
}
