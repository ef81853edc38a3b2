package office_test

import (
	"archive/zip"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/office"
)

func pkg(t *testing.T, files [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

// A document as Dutch Word writes it: style IDs "Kop1"/"Kop2" whose names are the English
// built-in "heading 1"/"heading 2", a custom style with an outline level, a table of
// contents, a tracked deletion, a field code and an endnote.
func TestDOCXStylesAndSkippedParts(t *testing.T) {
	styles := `<w:styles ` + w + `>
<w:style w:type="paragraph" w:styleId="Kop1"><w:name w:val="heading 1"/></w:style>
<w:style w:type="paragraph" w:styleId="Kop2"><w:name w:val="heading 2"/><w:basedOn w:val="Kop1"/></w:style>
<w:style w:type="paragraph" w:styleId="Besluitkop"><w:name w:val="Besluitkop"/><w:basedOn w:val="Standaard"/><w:pPr><w:outlineLvl w:val="2"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Standaard"><w:name w:val="Normal"/></w:style>
</w:styles>`
	doc := `<w:document ` + w + `><w:body>
<w:sdt><w:sdtPr><w:docPartObj><w:docPartGallery w:val="Table of Contents"/></w:docPartObj></w:sdtPr>
<w:sdtContent><w:p><w:r><w:t>Inhoudsopgave Beslispunt 1</w:t></w:r></w:p></w:sdtContent></w:sdt>
<w:p><w:pPr><w:pStyle w:val="Kop1"/></w:pPr><w:r><w:t>Raadsbesluit</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="Kop2"/></w:pPr><w:r><w:t xml:space="preserve">Beslis</w:t></w:r><w:r><w:t>punt</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">De raad </w:t></w:r><w:del><w:r><w:delText>verwerpt</w:delText></w:r></w:del><w:ins><w:r><w:t>besluit</w:t></w:r></w:ins><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>PAGE</w:instrText></w:r><w:r><w:t>.</w:t></w:r><w:r><w:endnoteReference w:id="2"/></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="Besluitkop"/></w:pPr><w:r><w:t>Artikel 1</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Fractie</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Voor</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>CDA</w:t></w:r></w:p><w:p><w:r><w:t>(2 leden)</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>4</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Bijlage</w:t></w:r></w:p>
<w:sectPr/></w:body></w:document>`
	endnotes := `<w:endnotes ` + w + `><w:endnote w:type="separator" w:id="0"><w:p><w:r><w:separator/></w:r></w:p></w:endnote>
<w:endnote w:id="2"><w:p><w:r><w:endnoteRef/></w:r><w:r><w:t xml:space="preserve"> Zie bijlage A.</w:t></w:r></w:p></w:endnote></w:endnotes>`
	data := pkg(t, [][2]string{{"word/document.xml", doc}, {"word/styles.xml", styles}, {"word/endnotes.xml", endnotes}})
	if mt := reader.Sniff(data); mt != reader.MediaTypeDOCX {
		t.Fatalf("sniffed %q", mt)
	}
	got, err := office.DOCX{}.Read(context.Background(), data, reader.MediaTypeDOCX)
	if err != nil {
		t.Fatal(err)
	}
	want := "Raadsbesluit\n\nBeslispunt\n\nDe raad besluit.[1]\n\nArtikel 1\n\nFractie\tVoor\nCDA (2 leden)\t4\n\nBijlage\n\n[1] Zie bijlage A."
	if got.Text != want {
		t.Errorf("text\n%q\nwant\n%q", got.Text, want)
	}
	var outline []string
	for _, h := range got.Outline {
		outline = append(outline, strings.Repeat("#", h.Level)+" "+h.Title)
	}
	if strings.Join(outline, "|") != "# Raadsbesluit|## Beslispunt|### Artikel 1|# Bijlage" {
		t.Errorf("outline %q", outline)
	}
}

func TestPackageErrors(t *testing.T) {
	ctx := context.Background()
	noBody := pkg(t, [][2]string{{"word/styles.xml", "<w:styles " + w + "/>"}})
	if _, err := (office.DOCX{}).Read(ctx, noBody, reader.MediaTypeDOCX); !isReason(err, reader.Corrupt) {
		t.Errorf("DOCX without word/document.xml: %v", err)
	}
	badXML := pkg(t, [][2]string{{"word/document.xml", "<w:document " + w + "><w:body><w:p>"}})
	if _, err := (office.DOCX{}).Read(ctx, badXML, reader.MediaTypeDOCX); !isReason(err, reader.Corrupt) || !strings.Contains(err.Error(), "word/document.xml") {
		t.Errorf("unclosed XML: %v", err)
	}
	odt := pkg(t, [][2]string{{"mimetype", reader.MediaTypeODT}, {"content.xml", `<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>
<text:h>Zonder niveau</text:h><text:p>a<text:s text:c="3"/>b<text:tab/>c<text:note><text:note-citation>1</text:note-citation><text:note-body><text:p>noot</text:p></text:note-body></text:note></text:p>
<text:tracked-changes><text:changed-region><text:deletion><text:p>weg</text:p></text:deletion></text:changed-region></text:tracked-changes>
</office:text></office:body></office:document-content>`}})
	doc, err := (office.ODT{}).Read(ctx, odt, reader.MediaTypeODT)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "Zonder niveau\n\na b c[1]\n\n[1] noot" || len(doc.Outline) != 1 || doc.Outline[0].Level != 1 {
		t.Errorf("ODT text %q outline %+v", doc.Text, doc.Outline)
	}
}

func isReason(err error, want reader.SkipReason) bool {
	r, ok := reader.ReasonOf(err)
	return ok && r == want
}
