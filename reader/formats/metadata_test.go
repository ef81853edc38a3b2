package formats_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ragops/ragops/reader"
)

// withPart returns the ZIP package pkg with the part name's content replaced by content
// (the other parts copied as they are), as an editor saving other properties would write it.
func withPart(t *testing.T, pkg []byte, name, content string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(pkg), int64(len(pkg)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	found := false
	for _, f := range zr.File {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: f.Method})
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == name {
			found = true
			_, err = io.WriteString(w, content)
		} else {
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				_, err = io.Copy(w, rc)
				rc.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("package has no part %s", name)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withPDFInfo appends to pdf an incremental update (ISO 32000-1, 7.5.6) whose trailer
// points at a new document information dictionary info, as an editor saving the
// document's properties writes it.
func withPDFInfo(t *testing.T, pdf []byte, info string) []byte {
	t.Helper()
	i := bytes.LastIndex(pdf, []byte("startxref"))
	j := bytes.LastIndex(pdf, []byte("trailer"))
	if i < 0 || j < 0 {
		t.Fatal("PDF has no trailer")
	}
	prev := strings.Fields(string(pdf[i+len("startxref"):]))[0]
	root := regexp.MustCompile(`/Root\s*(\d+ \d+ R)`).FindSubmatch(pdf[j:])
	size := regexp.MustCompile(`/Size\s*(\d+)`).FindSubmatch(pdf[j:])
	if root == nil || size == nil {
		t.Fatal("PDF trailer has no /Root or /Size")
	}
	var n int
	fmt.Sscan(string(size[1]), &n)
	var b bytes.Buffer
	b.Write(pdf)
	b.WriteString("\n")
	obj := b.Len()
	fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, info)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n%d 1\n%010d 00000 n \ntrailer\n<</Size %d/Root %s/Info %d 0 R/Prev %s>>\nstartxref\n%d\n%%%%EOF\n",
		n, obj, n+1, root[1], n, prev, xref)
	return b.Bytes()
}

// pdfText is s as a PDF text string in UTF-16BE with its byte order mark.
func pdfText(s string) string {
	var sb strings.Builder
	sb.WriteString("<FEFF")
	for _, u := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&sb, "%04X", u)
	}
	sb.WriteString(">")
	return sb.String()
}

const docxCore = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<dc:title>Motie windenergie Noordpolder</dc:title><dc:subject></dc:subject>
<dc:creator>J. de Vries</dc:creator><cp:lastModifiedBy>griffie</cp:lastModifiedBy>
<dcterms:created xsi:type="dcterms:W3CDTF">2021-06-14T09:30:00+02:00</dcterms:created>
<dcterms:modified xsi:type="dcterms:W3CDTF">2021-06-15T08:00:00Z</dcterms:modified>
</cp:coreProperties>`

// LibreOffice writes local times without a zone and the author as meta:initial-creator,
// dc:creator being who saved it last.
const odtMeta = `<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" office:version="1.3">
<office:meta><meta:generator>LibreOffice/7.4</meta:generator>
<dc:title>Motie windenergie Noordpolder</dc:title>
<meta:initial-creator>J. de Vries</meta:initial-creator><dc:creator>griffie</dc:creator>
<meta:creation-date>2021-06-14T09:30:00.250000000</meta:creation-date>
<dc:date>2021-06-15T08:00:00</dc:date><meta:editing-cycles>3</meta:editing-cycles>
</office:meta></office:document-meta>`

const htmlWithMeta = `<!DOCTYPE html><html><head><meta charset="utf-8">
<title>
  Motie   windenergie
</title>
<meta name="Author" content="J. de Vries">
<meta name="dcterms.date" content="2021-06-14">
<meta name="author" content="second, ignored">
<meta name="robots" content="">
<meta property="og:title" content="not a named meta">
</head><body><svg><title>icon</title></svg><h1>Motie</h1><p>Tekst.</p></body></html>`

const frontMatter = "---\n" +
	"title: Raadsbesluit 2026-041\n" +
	"author: Griffie Zuiderveen\n" +
	"date: 2026-03-12\n" +
	"type: besluit\n" +
	"year: 2026\n" +
	"openbaar: true\n" +
	"tags: [stationsplein, krediet]\n" +
	"---\n"

// TestMetadataFromEachFormat reads each format's fixture (and, where the fixture's
// properties are empty, the fixture with its properties part filled in as an editor
// writes it) and checks Document.Metadata exactly, and that it survives Encode/Decode.
func TestMetadataFromEachFormat(t *testing.T) {
	md := fixture(t, "raadsbesluit.md")
	cases := []struct {
		name string
		data []byte
		want map[string]any
	}{
		// LibreOffice's Info has only Creator, Producer and "D:20261130002109Z'".
		{"pdf", fixture(t, "raadsbesluit.pdf"), map[string]any{"created": "2026-11-30T00:21:09Z"}},
		{"pdf info", withPDFInfo(t, fixture(t, "raadsbesluit.pdf"),
			"<</Title(Motie windenergie Noordpolder)/Author"+pdfText("J. de Vriës – griffie")+
				"/CreationDate(D:20210614093000+02'00')/ModDate(D:20210615080000Z)>>"), map[string]any{
			"title":    "Motie windenergie Noordpolder",
			"author":   "J. de Vriës – griffie",
			"created":  "2021-06-14T09:30:00+02:00",
			"modified": "2021-06-15T08:00:00Z",
		}},
		{"docx", fixture(t, "raadsbesluit.docx"), map[string]any{
			"created":  "2026-11-30T00:21:07Z",
			"modified": "2026-11-30T00:21:07Z",
		}},
		{"docx core properties", withPart(t, fixture(t, "raadsbesluit.docx"), "docProps/core.xml", docxCore), map[string]any{
			"title":    "Motie windenergie Noordpolder",
			"author":   "J. de Vries",
			"created":  "2021-06-14T09:30:00+02:00",
			"modified": "2021-06-15T08:00:00Z",
		}},
		{"odt", fixture(t, "raadsbesluit.odt"), map[string]any{
			"created":  "2026-11-30T00:21:07Z",
			"modified": "2026-11-30T00:21:07Z",
		}},
		{"odt meta", withPart(t, fixture(t, "raadsbesluit.odt"), "meta.xml", odtMeta), map[string]any{
			"title":    "Motie windenergie Noordpolder",
			"author":   "J. de Vries",
			"created":  "2021-06-14T09:30:00.25Z",
			"modified": "2021-06-15T08:00:00Z",
		}},
		{"html", fixture(t, "raadsbesluit.html"), map[string]any{"title": "Raadsbesluit 2026-041"}},
		{"html meta", []byte(htmlWithMeta), map[string]any{
			"title":             "Motie windenergie",
			"meta.author":       "J. de Vries",
			"meta.dcterms.date": "2021-06-14",
		}},
		{"markdown", md, nil},
		{"markdown front matter", append([]byte(frontMatter), md...), map[string]any{
			"title":                "Raadsbesluit 2026-041",
			"author":               "Griffie Zuiderveen",
			"frontmatter.title":    "Raadsbesluit 2026-041",
			"frontmatter.author":   "Griffie Zuiderveen",
			"frontmatter.date":     "2026-03-12",
			"frontmatter.type":     "besluit",
			"frontmatter.year":     float64(2026),
			"frontmatter.openbaar": true,
			"frontmatter.tags":     []any{"stationsplein", "krediet"},
		}},
		{"beir", []byte(`{"_id": "m-2021-17", "title": " Motie\twindenergie ", "text": "De raad verzoekt het college ...", "metadata": {"type": "motie", "year": 2021, "aangenomen": true}}`), map[string]any{
			"title":           "Motie windenergie",
			"meta.type":       "motie",
			"meta.year":       float64(2021),
			"meta.aangenomen": true,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := readers.Read(context.Background(), c.data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(doc.Metadata, c.want) {
				t.Errorf("metadata\n%#v\nwant\n%#v", doc.Metadata, c.want)
			}
			b, err := reader.Encode(doc)
			if err != nil {
				t.Fatal(err)
			}
			back, err := reader.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Metadata, doc.Metadata) {
				t.Errorf("after Encode/Decode\n%#v\nwant\n%#v", back.Metadata, doc.Metadata)
			}
		})
	}
}

// TestFrontMatterIsNotText: a Markdown document with a front matter gives the same text
// and outline (offsets included) as without it, so chunks never hold the YAML; a leading
// "---" block that is not a YAML mapping stays Markdown.
func TestFrontMatterIsNotText(t *testing.T) {
	ctx := context.Background()
	md := fixture(t, "raadsbesluit.md")
	plain, err := readers.Read(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	for _, fm := range []string{frontMatter, "---\r\ntitle: x\r\n...\r\n", "---\n---\n"} {
		doc, err := readers.Read(ctx, append([]byte(fm), md...))
		if err != nil {
			t.Fatal(err)
		}
		if doc.Text != plain.Text || !reflect.DeepEqual(doc.Outline, plain.Outline) {
			t.Errorf("front matter %q changed the text or outline:\n%.200q\n%v", fm, doc.Text, doc.Outline)
		}
	}
	notYAML := "---\nEen zin, geen mapping\n---\n\nTekst.\n"
	doc, err := readers.Read(ctx, []byte(notYAML))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "Een zin, geen mapping\n\nTekst." || doc.Metadata != nil {
		t.Errorf("not a front matter: text %q, metadata %v", doc.Text, doc.Metadata)
	}
}
