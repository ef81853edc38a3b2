package reader_test

import (
	"errors"
	"os"
	"testing"

	"github.com/ragops/ragops/reader"
)

func TestSniffIgnoresNamesAndFindsContainers(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		data []byte
		want string
	}{
		{read("raadsbesluit.pdf"), reader.MediaTypePDF},
		{read("raadsbesluit.docx"), reader.MediaTypeDOCX},
		{read("raadsbesluit.odt"), reader.MediaTypeODT},
		{read("raadsbesluit.html"), reader.MediaTypeHTML},
		{read("raadsbesluit.md"), reader.MediaTypeMarkdown},
		{read("raadsbesluit.txt"), reader.MediaTypeText},
		{read("corrupt.docx"), reader.MediaTypeDOCX},
		{[]byte("junk before\n%PDF-1.4\n..."), reader.MediaTypePDF},
		{[]byte(`{"_id": "1", "title": "t", "text": "x"}` + "\n" + `{"_id": "2", "text": "y"}`), reader.MediaTypeBEIR},
		{[]byte(`{"id": "1", "body": "not beir"}`), reader.MediaTypeText},
		{[]byte("Titel\n=====\n\ntekst"), reader.MediaTypeMarkdown},
		{[]byte("\xef\xbb\xbf# Titel\n\ntekst"), reader.MediaTypeMarkdown}, // a UTF-8 byte order mark
		{[]byte("Zie [de bijlage](bijlage.pdf)."), reader.MediaTypeMarkdown},
		{[]byte("Gewone tekst, met #hashtag en 3 - 2 = 1."), reader.MediaTypeText},
		{[]byte("\x89PNG\r\n\x1a\n\x00\x00"), "image/png"},
	}
	for i, c := range cases {
		if got := reader.Sniff(c.data); got != c.want {
			t.Errorf("case %d: Sniff = %q, want %q", i, got, c.want)
		}
	}
}

func TestBuilderLayoutAndSections(t *testing.T) {
	var b reader.Builder
	b.StartPage(1)
	b.Heading(1, " Titel \n ")
	b.Paragraph("een  \t twee" + b.AddNote("  noot  één "))
	b.Heading(2, "A")
	b.Table([][]string{{"x", " y ", ""}, {"", ""}, {"1", "2"}})
	b.StartPage(2)
	b.Heading(0, "B") // clamped to level 1
	b.Paragraph("   ")
	b.Heading(3, "")
	doc := b.Finish("text/x-test")
	want := "Titel\n\neen twee[1]\n\nA\n\nx\ty\n1\t2\n\nB\n\n[1] noot één"
	if doc.Text != want {
		t.Fatalf("text %q, want %q", doc.Text, want)
	}
	wantOutline := []reader.Heading{
		{Level: 1, Title: "Titel", Start: 0, End: 32},
		{Level: 2, Title: "A", Start: 20, End: 32},
		{Level: 1, Title: "B", Start: 32, End: len(want)},
	}
	if len(doc.Outline) != len(wantOutline) {
		t.Fatalf("outline %+v", doc.Outline)
	}
	for i := range wantOutline {
		if doc.Outline[i] != wantOutline[i] {
			t.Errorf("heading %d: %+v, want %+v", i, doc.Outline[i], wantOutline[i])
		}
	}
	wantPages := []reader.Page{{Number: 1, Start: 0, End: 30}, {Number: 2, Start: 32, End: len(want)}}
	for i := range wantPages {
		if i >= len(doc.Pages) || doc.Pages[i] != wantPages[i] {
			t.Fatalf("pages %+v, want %+v", doc.Pages, wantPages)
		}
	}
	if f, l, ok := doc.PageRange(25, 40); !ok || f != 1 || l != 2 {
		t.Errorf("PageRange(25,40) = %d,%d,%v", f, l, ok)
	}
	if want[20] != 'A' || want[32] != 'B' || want[28:30] != "\t2" {
		t.Fatal("test offsets are wrong")
	}
	if got := doc.HeadingPath(25); len(got) != 2 || got[0] != "Titel" || got[1] != "A" {
		t.Errorf("HeadingPath(25) = %q", got)
	}
}

func TestSkipErrorWraps(t *testing.T) {
	base := errors.New("4: invalid password")
	err := error(reader.Skip(reader.Encrypted, reader.MediaTypePDF, base, "page %d", 3))
	wrapped := errors.Join(errors.New("doc x"), err)
	if r, ok := reader.ReasonOf(wrapped); !ok || r != reader.Encrypted {
		t.Fatalf("ReasonOf = %q, %v", r, ok)
	}
	if !errors.Is(wrapped, base) {
		t.Error("skip error does not unwrap to its cause")
	}
	if got := err.Error(); got != "skip document (Encrypted) application/pdf: page 3: 4: invalid password" {
		t.Errorf("message %q", got)
	}
	if _, ok := reader.ReasonOf(base); ok {
		t.Error("a plain error has a skip reason")
	}
}

func TestDecodeText(t *testing.T) {
	cases := map[string]string{
		"\xef\xbb\xbfbom\r\nline":         "bom\nline",
		"\xff\xfeF\x00i\x00\xeb\x00":      "Fië",
		"Financi\xeble \x80 38.000\rnext": "Financiële € 38.000\nnext",
		"al geldig: één":                  "al geldig: één",
	}
	for in, want := range cases {
		got, err := reader.DecodeText([]byte(in))
		if err != nil || got != want {
			t.Errorf("DecodeText(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
