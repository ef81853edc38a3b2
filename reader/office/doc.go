// Package office reads word-processing documents: Office Open XML (DOCX, ECMA-376) and
// OpenDocument Text (ODT, OASIS ODF 1.3), with archive/zip and encoding/xml.
//
// Paragraphs with heading styles become the outline: in DOCX a paragraph style named
// "heading N" or "Title" (style names are stored in English whatever the UI language, so
// Dutch "Kop 1" styles work), or a style or paragraph with an outline level; in ODT text:h
// elements with their text:outline-level. Tables become rows of cells. Footnotes and
// endnotes become "[n]" markers where referenced, with the bodies after the body text.
// Deleted tracked changes, field codes, tables of contents and VML fallbacks of drawings
// are left out. Automatic list numbering is not reproduced: a numbered list item keeps
// its text but not its number.
//
// Every XML part is read through a size limit (MaxPartBytes): a larger part, as a ZIP
// bomb would give, is reported as reader.TooLarge.
package office

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"

	"github.com/ragops/ragops/reader"
)

// MaxPartBytes is the largest uncompressed XML part read from a package: 256 MiB.
const MaxPartBytes = 256 << 20

var errTooLarge = errors.New("part exceeds the size limit")

// node is an XML element (Name.Local set) or a text node (Name.Local empty, Text set).
type node struct {
	Name xml.Name
	Attr []xml.Attr
	Kids []*node
	Text string
}

func (n *node) attr(local string) string {
	for _, a := range n.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func (n *node) child(local string) *node {
	for _, k := range n.Kids {
		if k.Name.Local == local {
			return k
		}
	}
	return nil
}

// childText returns the text of n's first child element named local (its text nodes
// joined, nested elements' text included); "" when there is none.
func (n *node) childText(local string) string {
	k := n.child(local)
	if k == nil {
		return ""
	}
	var sb strings.Builder
	var visit func(*node)
	visit = func(n *node) {
		sb.WriteString(n.Text)
		for _, c := range n.Kids {
			visit(c)
		}
	}
	visit(k)
	return sb.String()
}

// parseXML reads an XML document into a tree.
func parseXML(r io.Reader) (*node, error) {
	dec := xml.NewDecoder(r)
	dec.Strict = true
	root := &node{}
	stack := []*node{root}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{Name: t.Name, Attr: t.Attr}
			top.Kids = append(top.Kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.Kids = append(top.Kids, &node{Text: string(t)})
		}
	}
	if len(stack) != 1 {
		return nil, errors.New("unclosed elements at end of document")
	}
	return root, nil
}

// pkg is an opened ZIP package.
type pkg struct {
	zr        *zip.Reader
	mediaType string
}

func openPackage(data []byte, mediaType string) (*pkg, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, reader.Skip(reader.Corrupt, mediaType, err, "not a readable ZIP package")
	}
	return &pkg{zr: zr, mediaType: mediaType}, nil
}

func (p *pkg) has(name string) bool {
	for _, f := range p.zr.File {
		if f.Name == name {
			return true
		}
	}
	return false
}

// part parses the named XML part; a missing part gives (nil, nil) unless required.
func (p *pkg) part(name string, required bool) (*node, error) {
	for _, f := range p.zr.File {
		if f.Name != name {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, reader.Skip(reader.Corrupt, p.mediaType, err, "cannot open part %s", name)
		}
		defer rc.Close()
		lr := &limitReader{r: rc, n: MaxPartBytes}
		root, err := parseXML(lr)
		if errors.Is(err, errTooLarge) {
			return nil, reader.Skip(reader.TooLarge, p.mediaType, nil, "part %s is larger than %d bytes uncompressed", name, MaxPartBytes)
		}
		if err != nil {
			return nil, reader.Skip(reader.Corrupt, p.mediaType, err, "part %s is not well-formed XML", name)
		}
		return root, nil
	}
	if required {
		return nil, reader.Skip(reader.Corrupt, p.mediaType, nil, "package has no %s", name)
	}
	return nil, nil
}

type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	return n, err
}

// textJoin joins non-empty parts with a space.
func textJoin(parts []string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}
