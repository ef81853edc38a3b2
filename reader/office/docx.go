package office

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/ragops/ragops/reader"
)

// DOCX reads Office Open XML word-processing documents.
type DOCX struct{}

// MediaTypes implements reader.FormatReader.
func (DOCX) MediaTypes() []string { return []string{reader.MediaTypeDOCX} }

var headingName = regexp.MustCompile(`(?i)^heading\s*([1-9])$`)

type docxStyle struct {
	name, basedOn string
	outline       int // 0-based outline level, -1 when unset
}

type docxReader struct {
	b        *reader.Builder
	styles   map[string]docxStyle
	footnote map[string]string
	endnote  map[string]string
}

// Read implements reader.FormatReader.
func (DOCX) Read(_ context.Context, data []byte, mediaType string) (reader.Document, error) {
	p, err := openPackage(data, mediaType)
	if err != nil {
		return reader.Document{}, err
	}
	body, err := p.part("word/document.xml", true)
	if err != nil {
		return reader.Document{}, err
	}
	d := &docxReader{b: &reader.Builder{}, styles: map[string]docxStyle{}}
	styles, err := p.part("word/styles.xml", false)
	if err != nil {
		return reader.Document{}, err
	}
	if styles != nil {
		d.readStyles(styles)
	}
	if d.footnote, err = d.readNotes(p, "word/footnotes.xml", "footnote"); err != nil {
		return reader.Document{}, err
	}
	if d.endnote, err = d.readNotes(p, "word/endnotes.xml", "endnote"); err != nil {
		return reader.Document{}, err
	}
	d.block(body)
	doc := d.b.Finish(mediaType)
	coreProperties(p, &doc)
	return doc, nil
}

// coreProperties sets doc's metadata from docProps/core.xml (ECMA-376 Part 2, 11: Dublin
// Core elements): dc:title, dc:creator, dcterms:created and dcterms:modified. A missing or
// malformed part sets nothing: metadata never makes a readable document unreadable.
func coreProperties(p *pkg, doc *reader.Document) {
	core, err := p.part("docProps/core.xml", false)
	if err != nil || core == nil {
		return
	}
	props := core.child("coreProperties")
	if props == nil {
		return
	}
	doc.SetMeta(reader.MetaTitle, props.childText("title"))
	doc.SetMeta(reader.MetaAuthor, props.childText("creator"))
	doc.SetMeta(reader.MetaCreated, reader.NormalizeDate(props.childText("created")))
	doc.SetMeta(reader.MetaModified, reader.NormalizeDate(props.childText("modified")))
}

func (d *docxReader) readStyles(root *node) {
	var visit func(*node)
	visit = func(n *node) {
		if n.Name.Local == "style" && n.attr("type") == "paragraph" {
			s := docxStyle{outline: -1}
			if k := n.child("name"); k != nil {
				s.name = k.attr("val")
			}
			if k := n.child("basedOn"); k != nil {
				s.basedOn = k.attr("val")
			}
			if ppr := n.child("pPr"); ppr != nil {
				if k := ppr.child("outlineLvl"); k != nil {
					if v, err := strconv.Atoi(k.attr("val")); err == nil {
						s.outline = v
					}
				}
			}
			d.styles[n.attr("styleId")] = s
			return
		}
		for _, k := range n.Kids {
			visit(k)
		}
	}
	visit(root)
}

// headingLevel returns the outline level (1-based) of a paragraph style, 0 for body text.
func (d *docxReader) headingLevel(styleID string) int {
	for depth := 0; styleID != "" && depth < 16; depth++ {
		s, ok := d.styles[styleID]
		if !ok {
			if m := headingName.FindStringSubmatch(styleID); m != nil {
				return int(m[1][0] - '0')
			}
			return 0
		}
		if m := headingName.FindStringSubmatch(s.name); m != nil {
			return int(m[1][0] - '0')
		}
		if strings.EqualFold(s.name, "Title") {
			return 1
		}
		if s.outline >= 0 && s.outline < 9 {
			return s.outline + 1
		}
		styleID = s.basedOn
	}
	return 0
}

func (d *docxReader) readNotes(p *pkg, name, elem string) (map[string]string, error) {
	root, err := p.part(name, false)
	if err != nil || root == nil {
		return nil, err
	}
	notes := map[string]string{}
	var visit func(*node)
	visit = func(n *node) {
		if n.Name.Local == elem {
			if t := n.attr("type"); t == "" || t == "normal" {
				var parts []string
				for _, k := range n.Kids {
					parts = append(parts, d.runs(k))
				}
				notes[n.attr("id")] = textJoin(parts)
			}
			return
		}
		for _, k := range n.Kids {
			visit(k)
		}
	}
	visit(root)
	return notes, nil
}

func (d *docxReader) block(n *node) {
	switch n.Name.Local {
	case "p":
		level := 0
		if ppr := n.child("pPr"); ppr != nil {
			if s := ppr.child("pStyle"); s != nil {
				level = d.headingLevel(s.attr("val"))
			}
			if o := ppr.child("outlineLvl"); o != nil {
				if v, err := strconv.Atoi(o.attr("val")); err == nil && v < 9 {
					level = v + 1
				}
			}
		}
		text := d.runs(n)
		if level > 0 {
			d.b.Heading(level, text)
		} else {
			d.b.Paragraph(text)
		}
		return
	case "tbl":
		var rows [][]string
		for _, tr := range n.Kids {
			if tr.Name.Local != "tr" {
				continue
			}
			var cells []string
			for _, tc := range tr.Kids {
				if tc.Name.Local == "tc" {
					cells = append(cells, d.runs(tc))
				} else if tc.Name.Local == "sdt" {
					if c := tc.child("sdtContent"); c != nil {
						for _, k := range c.Kids {
							if k.Name.Local == "tc" {
								cells = append(cells, d.runs(k))
							}
						}
					}
				}
			}
			rows = append(rows, cells)
		}
		d.b.Table(rows)
		return
	case "sdt":
		if isTOC(n) {
			return
		}
	case "sectPr", "Fallback":
		return
	}
	for _, k := range n.Kids {
		d.block(k)
	}
}

// isTOC reports whether a structured document tag holds a table of contents.
func isTOC(sdt *node) bool {
	pr := sdt.child("sdtPr")
	if pr == nil {
		return false
	}
	if g := pr.child("docPartObj"); g != nil {
		if gal := g.child("docPartGallery"); gal != nil && strings.Contains(gal.attr("val"), "Table of Contents") {
			return true
		}
	}
	return false
}

// runs returns the text of n's runs, paragraphs inside (table cells, text boxes) separated
// by spaces, footnote references replaced by markers.
func (d *docxReader) runs(n *node) string {
	var sb strings.Builder
	var visit func(*node)
	visit = func(n *node) {
		switch n.Name.Local {
		case "":
			return // character data counts only inside w:t
		case "t":
			for _, k := range n.Kids {
				sb.WriteString(k.Text)
			}
			return
		case "tab", "br", "cr", "noBreakHyphen":
			if n.Name.Local == "noBreakHyphen" {
				sb.WriteByte('-')
			} else {
				sb.WriteByte(' ')
			}
			return
		case "footnoteReference":
			if body, ok := d.footnote[n.attr("id")]; ok {
				sb.WriteString(d.b.AddNote(body))
			}
			return
		case "endnoteReference":
			if body, ok := d.endnote[n.attr("id")]; ok {
				sb.WriteString(d.b.AddNote(body))
			}
			return
		case "delText", "instrText", "pPr", "rPr", "Fallback", "footnoteRef", "endnoteRef", "sectPr":
			return
		case "p", "tc":
			sb.WriteByte(' ')
		}
		for _, k := range n.Kids {
			visit(k)
		}
		if n.Name.Local == "p" || n.Name.Local == "tc" {
			sb.WriteByte(' ')
		}
	}
	visit(n)
	return reader.CollapseSpace(sb.String())
}
