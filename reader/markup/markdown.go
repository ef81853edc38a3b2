package markup

import (
	"context"
	"strconv"
	"strings"

	"github.com/ragops/ragops/reader"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"sigs.k8s.io/yaml"
)

// Markdown reads CommonMark/GFM Markdown. Headings (ATX and setext) give the outline;
// paragraphs and list items (ordered ones prefixed "n. ") become paragraphs; code blocks
// (fenced and indented) keep their lines byte for byte inside a fence (reader.Builder.Code);
// GFM tables become rows; footnote references become "[n]" markers with the bodies at the
// end; raw HTML and images' URLs are dropped (image alt text is kept).
//
// A YAML front matter (a first line "---", then YAML up to a line "---" or "...") that
// parses as a mapping is not text: its top-level keys go to Document.Metadata as
// reader.MetaFrontMatterPrefix + key, its "title" and "author" (when strings) also as
// reader.MetaTitle and reader.MetaAuthor, and the text is read from the line after it. A
// leading block that is not a YAML mapping is read as Markdown, as before.
type Markdown struct{}

var markdownParser = goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote)).Parser()

// MediaTypes implements reader.FormatReader.
func (Markdown) MediaTypes() []string { return []string{reader.MediaTypeMarkdown} }

// Read implements reader.FormatReader.
func (Markdown) Read(_ context.Context, data []byte, mediaType string) (reader.Document, error) {
	s, enc, err := reader.DecodeTextEncoding(data)
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "cannot decode text")
	}
	fm, body, hasFM := splitFrontMatter(s)
	src := []byte(body)
	root := markdownParser.Parse(text.NewReader(src))
	w := &mdWalker{src: src, b: &reader.Builder{}, notes: map[int]string{}}
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fn, ok := n.(*extast.Footnote); ok && entering {
			var parts []string
			for c := fn.FirstChild(); c != nil; c = c.NextSibling() {
				parts = append(parts, w.inline(c))
			}
			w.notes[fn.Index] = strings.Join(parts, " ")
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	w.block(root, "")
	doc := w.b.Finish(mediaType)
	doc.Encoding = enc
	if hasFM {
		setFrontMatter(&doc, fm)
	}
	return doc, nil
}

// splitFrontMatter splits a leading YAML front matter off s: its fields (nil when empty)
// and the rest of s after its closing line. ok is false, and body s, when s does not start
// with one or its YAML is not a mapping.
func splitFrontMatter(s string) (fields map[string]any, body string, ok bool) {
	first, _, found := strings.Cut(s, "\n")
	if !found || strings.TrimRight(first, " \t\r") != "---" {
		return nil, s, false
	}
	start := len(first) + 1
	for off := start; off < len(s); {
		line, _, more := strings.Cut(s[off:], "\n")
		if t := strings.TrimRight(line, " \t\r"); t == "---" || t == "..." {
			y := s[start:off]
			if strings.TrimSpace(y) != "" {
				if err := yaml.Unmarshal([]byte(y), &fields); err != nil || fields == nil {
					return nil, s, false
				}
			}
			if !more {
				return fields, "", true
			}
			return fields, s[off+len(line)+1:], true
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	return nil, s, false
}

// setFrontMatter adds a front matter's fields to doc.Metadata (see Markdown).
func setFrontMatter(doc *reader.Document, fields map[string]any) {
	for k, v := range fields {
		if doc.Metadata == nil {
			doc.Metadata = map[string]any{}
		}
		doc.Metadata[reader.MetaFrontMatterPrefix+k] = v
	}
	if t, ok := fields["title"].(string); ok {
		doc.SetMeta(reader.MetaTitle, reader.CollapseSpace(t))
	}
	if a, ok := fields["author"].(string); ok {
		doc.SetMeta(reader.MetaAuthor, a)
	}
}

type mdWalker struct {
	src   []byte
	b     *reader.Builder
	notes map[int]string
}

// block writes n's blocks; prefix goes before the first paragraph (a list item's number).
func (w *mdWalker) block(n ast.Node, prefix string) string {
	switch n := n.(type) {
	case *ast.Heading:
		w.b.Heading(n.Level, w.inline(n))
		return prefix
	case *ast.Paragraph, *ast.TextBlock:
		w.b.Paragraph(prefix + w.inline(n))
		return ""
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		// Byte for byte, lines and indentation kept (Builder.Code), as a BEIR record's
		// Markdown keeps them; a list item's number stands before it on its own.
		var sb strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			sb.Write(seg.Value(w.src))
		}
		info := ""
		if f, ok := n.(*ast.FencedCodeBlock); ok && f.Info != nil {
			info = string(f.Language(w.src))
		}
		if strings.TrimSpace(sb.String()) == "" {
			return prefix
		}
		if prefix != "" {
			w.b.Paragraph(prefix)
		}
		w.b.Code(info, sb.String())
		return ""
	case *ast.HTMLBlock, *ast.ThematicBreak, *extast.FootnoteList:
		return prefix
	case *extast.Table:
		var rows [][]string
		for r := n.FirstChild(); r != nil; r = r.NextSibling() {
			var cells []string
			for c := r.FirstChild(); c != nil; c = c.NextSibling() {
				cells = append(cells, w.inline(c))
			}
			rows = append(rows, cells)
		}
		if prefix != "" {
			w.b.Paragraph(prefix)
		}
		w.b.Table(rows)
		return ""
	case *ast.List:
		num := n.Start
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			p := ""
			if n.IsOrdered() {
				p = strconv.Itoa(num) + ". "
				num++
			}
			if rest := w.block(c, prefix+p); rest != "" {
				w.b.Paragraph(rest)
			}
			prefix = ""
		}
		return prefix
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		prefix = w.block(c, prefix)
	}
	return prefix
}

// inline returns the text of n's inline content.
func (w *mdWalker) inline(n ast.Node) string {
	var sb strings.Builder
	w.inlineTo(&sb, n)
	return sb.String()
}

func (w *mdWalker) inlineTo(sb *strings.Builder, n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			// As goldmark's HTML renderer does: backslash escapes and entity references.
			v := util.UnescapePunctuations(c.Segment.Value(w.src))
			sb.Write(util.ResolveEntityNames(util.ResolveNumericReferences(v)))
			if c.SoftLineBreak() || c.HardLineBreak() {
				sb.WriteByte(' ')
			}
		case *ast.CodeSpan:
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if t, ok := t.(*ast.Text); ok {
					sb.Write(t.Segment.Value(w.src))
				}
			}
		case *ast.String:
			sb.Write(c.Value)
		case *ast.AutoLink:
			sb.Write(c.Label(w.src))
		case *ast.RawHTML:
		case *extast.FootnoteLink:
			if body, ok := w.notes[c.Index]; ok {
				sb.WriteString(w.b.AddNote(body))
			}
		case *extast.FootnoteBacklink:
		case *ast.Paragraph, *ast.TextBlock:
			// Block children inside a footnote body.
			sb.WriteByte(' ')
			w.inlineTo(sb, c)
		default:
			w.inlineTo(sb, c)
		}
	}
}

// Headings returns the CommonMark/GFM headings (ATX and setext) of Markdown src, parsed
// with goldmark, so lines inside code blocks (fenced, indented, or fenced inside a list
// item or block quote) never count. Each heading's Start is the byte offset in src of the
// line it begins on (its "#" marks included); its title is the inline text as Markdown.Read
// writes it. End is left 0: callers set section ends on their whole text (see
// reader.SetSectionEnds). Headings with an empty title are left out.
func Headings(src string) []reader.Heading {
	b := []byte(src)
	root := markdownParser.Parse(text.NewReader(b))
	w := &mdWalker{src: b, b: &reader.Builder{}, notes: map[int]string{}}
	var out []reader.Heading
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		title := reader.CollapseSpace(w.inline(h))
		if title == "" || h.Lines().Len() == 0 {
			return ast.WalkSkipChildren, nil
		}
		start := h.Lines().At(0).Start
		for start > 0 && b[start-1] != '\n' {
			start--
		}
		out = append(out, reader.Heading{Level: h.Level, Title: title, Start: start})
		return ast.WalkSkipChildren, nil
	})
	return out
}
