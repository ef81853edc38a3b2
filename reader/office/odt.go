package office

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/ragops/ragops/reader"
)

// ODT reads OpenDocument Text documents (content.xml of the package).
type ODT struct{}

// MediaTypes implements reader.FormatReader.
func (ODT) MediaTypes() []string { return []string{reader.MediaTypeODT} }

type odtReader struct {
	b *reader.Builder
}

// Read implements reader.FormatReader. A package whose manifest lists encryption data is
// reported as reader.Encrypted.
func (ODT) Read(_ context.Context, data []byte, mediaType string) (reader.Document, error) {
	p, err := openPackage(data, mediaType)
	if err != nil {
		return reader.Document{}, err
	}
	if p.encrypted() {
		return reader.Document{}, reader.Skip(reader.Encrypted, mediaType, nil, "ODF package is encrypted with a password")
	}
	content, err := p.part("content.xml", true)
	if err != nil {
		return reader.Document{}, err
	}
	o := &odtReader{b: &reader.Builder{}}
	o.block(content)
	doc := o.b.Finish(mediaType)
	odfMeta(p, &doc)
	return doc, nil
}

// odfMeta sets doc's metadata from meta.xml (ODF 1.3 part 3, 4.3 office:meta): dc:title,
// meta:initial-creator (the author; dc:creator, who saved it last, when absent),
// meta:creation-date and dc:date (last modified). A missing or malformed part sets
// nothing.
func odfMeta(p *pkg, doc *reader.Document) {
	root, err := p.part("meta.xml", false)
	if err != nil || root == nil {
		return
	}
	m := root.child("document-meta")
	if m != nil {
		m = m.child("meta")
	}
	if m == nil {
		return
	}
	author := m.childText("initial-creator")
	if strings.TrimSpace(author) == "" {
		author = m.childText("creator")
	}
	doc.SetMeta(reader.MetaTitle, m.childText("title"))
	doc.SetMeta(reader.MetaAuthor, author)
	doc.SetMeta(reader.MetaCreated, reader.NormalizeDate(m.childText("creation-date")))
	doc.SetMeta(reader.MetaModified, reader.NormalizeDate(m.childText("date")))
}

// encrypted reports whether META-INF/manifest.xml has manifest:encryption-data entries.
func (p *pkg) encrypted() bool {
	for _, f := range p.zr.File {
		if f.Name != "META-INF/manifest.xml" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return false
		}
		defer rc.Close()
		b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
		return bytes.Contains(b, []byte("encryption-data"))
	}
	return false
}

func (o *odtReader) block(n *node) {
	switch n.Name.Local {
	case "h":
		level := 1
		if v, err := strconv.Atoi(n.attr("outline-level")); err == nil && v > 0 {
			level = v
		}
		o.b.Heading(level, o.inline(n))
		return
	case "p":
		o.b.Paragraph(o.inline(n))
		return
	case "table":
		var rows [][]string
		var visit func(*node)
		visit = func(m *node) {
			for _, k := range m.Kids {
				switch k.Name.Local {
				case "table-row":
					var cells []string
					for _, c := range k.Kids {
						if c.Name.Local == "table-cell" {
							cells = append(cells, o.inline(c))
						}
					}
					rows = append(rows, cells)
				case "table-header-rows", "table-rows", "table-row-group":
					visit(k)
				}
			}
		}
		visit(n)
		o.b.Table(rows)
		return
	case "table-of-content", "illustration-index", "alphabetical-index", "bibliography",
		"tracked-changes", "sequence-decls", "variable-decls", "user-field-decls", "forms",
		"font-face-decls", "automatic-styles", "scripts":
		return
	}
	for _, k := range n.Kids {
		o.block(k)
	}
}

// inline returns the text of a paragraph-like element: spaces for text:s (with text:c),
// tabs and line breaks; notes replaced by markers; annotations and change marks left out.
func (o *odtReader) inline(n *node) string {
	var sb strings.Builder
	var visit func(*node)
	visit = func(n *node) {
		switch n.Name.Local {
		case "":
			sb.WriteString(n.Text)
			return
		case "s":
			c, err := strconv.Atoi(n.attr("c"))
			if err != nil || c < 1 {
				c = 1
			}
			sb.WriteString(strings.Repeat(" ", min(c, 64)))
			return
		case "tab", "line-break":
			sb.WriteByte(' ')
			return
		case "note":
			if body := n.child("note-body"); body != nil {
				sb.WriteString(o.b.AddNote(o.inline(body)))
			}
			return
		case "annotation", "annotation-end", "change", "change-start", "change-end", "note-citation":
			return
		case "p", "h", "table-cell", "list-item":
			sb.WriteByte(' ')
		}
		for _, k := range n.Kids {
			visit(k)
		}
		if n.Name.Local == "p" || n.Name.Local == "h" || n.Name.Local == "table-cell" {
			sb.WriteByte(' ')
		}
	}
	for _, k := range n.Kids {
		visit(k)
	}
	return reader.CollapseSpace(sb.String())
}
