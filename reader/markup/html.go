package markup

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/ragops/ragops/reader"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// HTML reads HTML documents (any charset the document declares; UTF-8 by default).
// h1-h6 give the outline; block elements (p, div, li, blockquote, pre, dt, dd, ...) become
// paragraphs, ordered list items prefixed "n. "; each table becomes rows of cells (a
// caption becomes a paragraph before it). Footnotes in the shape pandoc and many editors
// write (a link with role="doc-noteref" or class "footnote-ref" to a list item in a
// role="doc-endnotes" or class "footnotes" section) become "[n]" markers with the bodies
// at the end. Dropped as boilerplate: head, nav, script, style, aside, noscript, template,
// svg, iframe, form controls, and header/footer elements that are not inside an article,
// main or section element (those usually carry the article's own title).
type HTML struct{}

// MediaTypes implements reader.FormatReader.
func (HTML) MediaTypes() []string { return []string{reader.MediaTypeHTML} }

// Read implements reader.FormatReader.
func (HTML) Read(_ context.Context, data []byte, mediaType string) (reader.Document, error) {
	r, err := charset.NewReader(bytes.NewReader(data), "text/html")
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "cannot determine the character set")
	}
	root, err := html.Parse(r)
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "cannot parse HTML")
	}
	w := &htmlWalker{b: &reader.Builder{}, notes: map[string]string{}, noteLists: map[*html.Node]bool{}}
	w.findNotes(root)
	w.walk(root)
	w.flush()
	doc := w.b.Finish(mediaType)
	htmlMeta(root, &doc)
	return doc, nil
}

// htmlMeta sets doc's metadata from the document's first <title> (reader.MetaTitle,
// white space collapsed) and its <meta name content> elements (reader.MetaNamedPrefix +
// the name lower-cased; the first of several with one name wins). Elements inside svg or
// template content are not the document's.
func htmlMeta(root *html.Node, doc *reader.Document) {
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Svg, atom.Template:
				return
			case atom.Title:
				if _, ok := doc.Metadata[reader.MetaTitle]; !ok {
					doc.SetMeta(reader.MetaTitle, reader.CollapseSpace(textOf(n)))
				}
				return
			case atom.Meta:
				name := strings.ToLower(strings.TrimSpace(attr(n, "name")))
				if name != "" && hasAttr(n, "content") {
					if _, ok := doc.Metadata[reader.MetaNamedPrefix+name]; !ok {
						doc.SetMeta(reader.MetaNamedPrefix+name, attr(n, "content"))
					}
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	visit(root)
}

type htmlWalker struct {
	b         *reader.Builder
	para      strings.Builder
	prefix    string              // an ordered list item's "n. ", written before its first paragraph
	notes     map[string]string   // footnote list item id -> body text
	noteLists map[*html.Node]bool // footnote sections, written only through the markers
}

var blockTags = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Blockquote: true, atom.Pre: true,
	atom.Section: true, atom.Article: true, atom.Main: true, atom.Body: true, atom.Ul: true,
	atom.Ol: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Figure: true,
	atom.Figcaption: true, atom.Address: true, atom.Hr: true, atom.Details: true,
	atom.Summary: true, atom.Fieldset: true, atom.Legend: true, atom.Caption: true,
	atom.Header: true, atom.Footer: true, atom.Table: true, atom.Tr: true, atom.Td: true, atom.Th: true,
}

var droppedTags = map[atom.Atom]bool{
	atom.Head: true, atom.Nav: true, atom.Script: true, atom.Style: true, atom.Aside: true,
	atom.Noscript: true, atom.Template: true, atom.Svg: true, atom.Iframe: true,
	atom.Select: true, atom.Button: true, atom.Textarea: true, atom.Object: true, atom.Canvas: true,
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// dropped reports whether n and its subtree are boilerplate.
func dropped(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return n.Type == html.CommentNode
	}
	if droppedTags[n.DataAtom] || hasAttr(n, "hidden") {
		return true
	}
	if n.DataAtom == atom.Header || n.DataAtom == atom.Footer {
		for p := n.Parent; p != nil; p = p.Parent {
			switch p.DataAtom {
			case atom.Article, atom.Main, atom.Section:
				return false
			}
		}
		return true
	}
	return false
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func isNoteList(n *html.Node) bool {
	return n.Type == html.ElementNode && (attr(n, "role") == "doc-endnotes" || hasClass(n, "footnotes"))
}

func isNoteRef(n *html.Node) bool {
	return n.DataAtom == atom.A && (attr(n, "role") == "doc-noteref" || hasClass(n, "footnote-ref")) &&
		strings.HasPrefix(attr(n, "href"), "#")
}

func isBacklink(n *html.Node) bool {
	return n.DataAtom == atom.A && (attr(n, "role") == "doc-backlink" || hasClass(n, "footnote-back"))
}

func (w *htmlWalker) findNotes(n *html.Node) {
	if isNoteList(n) {
		w.noteLists[n] = true
		var items func(*html.Node)
		items = func(m *html.Node) {
			if m.DataAtom == atom.Li && attr(m, "id") != "" {
				w.notes[attr(m, "id")] = textOf(m)
				return
			}
			for c := m.FirstChild; c != nil; c = c.NextSibling {
				items(c)
			}
		}
		items(n)
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.findNotes(c)
	}
}

// flush writes the pending inline text as a paragraph, after a pending list number.
func (w *htmlWalker) flush() {
	if text := reader.CollapseSpace(w.para.String()); text != "" {
		w.b.Paragraph(w.prefix + text)
		w.prefix = ""
	}
	w.para.Reset()
}

func (w *htmlWalker) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.para.WriteString(n.Data)
		return
	case html.DocumentNode:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			w.walk(c)
		}
		return
	case html.ElementNode:
	default:
		return
	}
	if dropped(n) || w.noteLists[n] || isBacklink(n) {
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w.flush()
		w.b.Heading(int(n.Data[1]-'0'), textOf(n))
		return
	case atom.Table:
		w.flush()
		w.table(n)
		return
	case atom.Br:
		w.para.WriteByte(' ')
		return
	case atom.Img:
		w.para.WriteString(attr(n, "alt"))
		return
	case atom.A:
		if isNoteRef(n) {
			if body, ok := w.notes[strings.TrimPrefix(attr(n, "href"), "#")]; ok {
				w.para.WriteString(w.b.AddNote(body))
				return
			}
		}
	case atom.Ol:
		w.flush()
		num := 1
		if s, err := strconv.Atoi(attr(n, "start")); err == nil {
			num = s
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.DataAtom != atom.Li || dropped(c) {
				w.walk(c)
				continue
			}
			w.flush()
			w.prefix = strconv.Itoa(num) + ". "
			num++
			for k := c.FirstChild; k != nil; k = k.NextSibling {
				w.walk(k)
			}
			w.flush()
			w.prefix = ""
		}
		w.flush()
		return
	}
	block := blockTags[n.DataAtom]
	if block {
		w.flush()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
	if block {
		w.flush()
	}
}

// table writes a table's caption and rows; nested tables' text stays inside their cell.
func (w *htmlWalker) table(t *html.Node) {
	var rows [][]string
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || dropped(c) {
				continue
			}
			switch c.DataAtom {
			case atom.Caption:
				w.b.Paragraph(textOf(c))
			case atom.Tr:
				var cells []string
				for td := c.FirstChild; td != nil; td = td.NextSibling {
					if td.DataAtom == atom.Td || td.DataAtom == atom.Th {
						cells = append(cells, textOf(td))
					}
				}
				rows = append(rows, cells)
			case atom.Thead, atom.Tbody, atom.Tfoot:
				visit(c)
			}
		}
	}
	visit(t)
	w.b.Table(rows)
}

// textOf returns the text of n's subtree with boilerplate left out and a space at block
// boundaries and line breaks.
func textOf(n *html.Node) string {
	var sb strings.Builder
	var visit func(*html.Node)
	visit = func(m *html.Node) {
		switch {
		case m.Type == html.TextNode:
			sb.WriteString(m.Data)
			return
		case m.Type != html.ElementNode, dropped(m), isBacklink(m):
			return
		case m.DataAtom == atom.Br:
			sb.WriteByte(' ')
			return
		case m.DataAtom == atom.Img:
			sb.WriteString(attr(m, "alt"))
			return
		}
		block := blockTags[m.DataAtom]
		if block {
			sb.WriteByte(' ')
		}
		for c := m.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
		if block {
			sb.WriteByte(' ')
		}
	}
	visit(n)
	return reader.CollapseSpace(sb.String())
}
