package formats_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/formats"
)

var readers *formats.Readers

func TestMain(m *testing.M) {
	var err error
	readers, err = formats.New(context.Background(), formats.Options{PDF: pdfOptions()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start readers:", err)
		os.Exit(1)
	}
	code := m.Run()
	readers.Close()
	os.Exit(code)
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatalf("fixture %s (made by hack/make-reader-fixtures.sh): %v", name, err)
	}
	return b
}

// squeeze drops all white space: "the same text modulo whitespace".
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

func outlineString(d reader.Document) string {
	var sb strings.Builder
	for _, h := range d.Outline {
		fmt.Fprintf(&sb, "%d %s\n", h.Level, h.Title)
	}
	return sb.String()
}

// The expected outline is written out here, not taken from a reader, so a reader that
// loses a heading fails even if the Markdown reader loses it too.
const wantOutline = `1 Raadsbesluit 2026-041 over de herinrichting van het Stationsplein
2 Beslispunt
2 Motivering
3 Financiële gevolgen
3 Risico's
2 Stemverhouding
`

func TestSameResolutionEveryFormat(t *testing.T) {
	ctx := context.Background()
	ref, err := readers.Read(ctx, fixture(t, "raadsbesluit.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1. Het Voorlopig Ontwerp", "Lokaal Zuiderveen\t0\t6", "tegen.[1] De stemmen",
		"\n\n[1] Het raadslid van de Partij voor de Dieren"} {
		if !strings.Contains(ref.Text, want) {
			t.Errorf("Markdown text lacks %q", want)
		}
	}
	cases := []struct {
		file, mediaType string
		outline, pages  bool
	}{
		{"raadsbesluit.md", reader.MediaTypeMarkdown, true, false},
		{"raadsbesluit.html", reader.MediaTypeHTML, true, false},
		{"raadsbesluit.txt", reader.MediaTypeText, false, false},
		{"raadsbesluit.docx", reader.MediaTypeDOCX, true, false},
		{"raadsbesluit.odt", reader.MediaTypeODT, true, false},
		{"raadsbesluit.pdf", reader.MediaTypePDF, true, true},
		{"raadsbesluit-nobookmarks.pdf", reader.MediaTypePDF, true, true},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			doc, err := readers.Read(ctx, fixture(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if doc.MediaType != c.mediaType {
				t.Errorf("media type %q, want %q", doc.MediaType, c.mediaType)
			}
			if got, want := squeeze(doc.Text), squeeze(ref.Text); got != want {
				t.Errorf("text differs from the Markdown reader's (whitespace ignored)\n got: %.300q\nwant: %.300q", got, want)
			}
			for _, junk := range []string{"Privacyverklaring", "Raadsinformatie", "dataLayer", "font-family", "Besluiten", "Bekijk ook", "↩"} {
				if strings.Contains(doc.Text, junk) {
					t.Errorf("text keeps boilerplate %q", junk)
				}
			}
			if !c.outline {
				if len(doc.Outline) != 0 {
					t.Errorf("plain text has an outline: %v", doc.Outline)
				}
				return
			}
			if got := outlineString(doc); got != wantOutline {
				t.Errorf("outline\n%s\nwant\n%s", got, wantOutline)
			}
			checkSpans(t, doc)
			sec := func(title string) string {
				for _, h := range doc.Outline {
					if h.Title == title {
						return doc.Text[h.Start:h.End]
					}
				}
				return ""
			}
			if s := sec("Beslispunt"); !strings.Contains(s, "3. Het college op te dragen") || strings.Contains(s, "Motivering") {
				t.Errorf("Beslispunt section is %.120q", s)
			}
			if s := sec("Motivering"); !strings.Contains(s, "Financiële gevolgen") || !strings.Contains(s, "post onvoorzien") || strings.Contains(s, "Stemverhouding") {
				t.Errorf("Motivering section does not hold exactly its subsections: %.120q", s)
			}
			if s := sec("Stemverhouding"); !strings.Contains(s, "Lokaal Zuiderveen") {
				t.Errorf("Stemverhouding section lacks the table: %.120q", s)
			}
			if c.pages {
				checkPages(t, doc)
			} else if len(doc.Pages) != 0 {
				t.Errorf("pages %v for a format without pages", doc.Pages)
			}
		})
	}
}

// checkSpans asserts every heading starts its line with its title and sections nest.
func checkSpans(t *testing.T, doc reader.Document) {
	t.Helper()
	prev := -1
	for i, h := range doc.Outline {
		if h.Start < prev || h.Start > h.End || h.End > len(doc.Text) {
			t.Fatalf("heading %q span [%d,%d) out of order or range (text %d bytes)", h.Title, h.Start, h.End, len(doc.Text))
		}
		if !strings.HasPrefix(doc.Text[h.Start:], h.Title) {
			t.Errorf("text at heading %q start is %.40q", h.Title, doc.Text[h.Start:])
		}
		if got := doc.Text[h.Start:doc.TitleEnd(i)]; got != h.Title {
			t.Errorf("heading line %q, want its title %q", got, h.Title)
		}
		if h.Start > 0 && doc.Text[h.Start-1] != '\n' {
			t.Errorf("heading %q does not start a line", h.Title)
		}
		prev = h.Start
	}
}

func checkPages(t *testing.T, doc reader.Document) {
	t.Helper()
	if len(doc.Pages) != 2 {
		t.Fatalf("pages %v, want 2", doc.Pages)
	}
	if doc.Pages[0].Start != 0 || doc.Pages[1].End != len(doc.Text) || doc.Pages[0].End > doc.Pages[1].Start {
		t.Errorf("pages %v do not cover the text (%d bytes) in order", doc.Pages, len(doc.Text))
	}
	// Page 1 ends inside "Financiële gevolgen" ("... De jaarlijkse kosten van" / "beheer en
	// onderhoud ..." on page 2, as pdftotext shows for the fixture).
	at := func(s string) (int, int) {
		i := strings.Index(doc.Text, s)
		if i < 0 {
			t.Fatalf("text lacks %q", s)
		}
		first, last, ok := doc.PageRange(i, i+len(s))
		if !ok {
			t.Fatalf("no page for %q", s)
		}
		return first, last
	}
	if f, l := at("Beslispunt"); f != 1 || l != 1 {
		t.Errorf("Beslispunt on pages %d-%d, want 1", f, l)
	}
	if f, l := at("beheer en onderhoud"); f != 2 || l != 2 {
		t.Errorf("'beheer en onderhoud' on pages %d-%d, want 2", f, l)
	}
	i, j := strings.Index(doc.Text, "Financiële gevolgen"), strings.Index(doc.Text, "Risico's")
	if f, l, _ := doc.PageRange(i, j); f != 1 || l != 2 {
		t.Errorf("Financiële gevolgen section on pages %d-%d, want 1-2", f, l)
	}
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"mimetype", "META-INF/manifest.xml", "content.xml"} {
		if body, ok := files[name]; ok {
			w, err := zw.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(body))
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSkipReasons(t *testing.T) {
	ctx := context.Background()
	encryptedODT := zipOf(t, map[string]string{
		"mimetype": reader.MediaTypeODT,
		"META-INF/manifest.xml": `<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">` +
			`<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">` +
			`<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="x"/></manifest:file-entry></manifest:manifest>`,
		"content.xml": "\x8f\x01binary ciphertext",
	})
	// An OOXML file encrypted with a password is a Compound File holding an
	// "EncryptedPackage" stream (MS-OFFCRYPTO 2.3.4.4); the sniffer looks for that name.
	cfb := append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 504)...)
	for _, r := range "EncryptedPackage" {
		cfb = append(cfb, byte(r), 0)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")
	cases := []struct {
		name string
		data []byte
		want reader.SkipReason
	}{
		{"encrypted.pdf", fixture(t, "encrypted.pdf"), reader.Encrypted},
		{"corrupt.pdf", fixture(t, "corrupt.pdf"), reader.Corrupt},
		{"empty.pdf", fixture(t, "empty.pdf"), reader.Empty},
		{"scanned.pdf", fixture(t, "scanned.pdf"), reader.NoTextLayer},
		{"corrupt.docx", fixture(t, "corrupt.docx"), reader.Corrupt},
		{"truncated.odt", fixture(t, "raadsbesluit.odt")[:4000], reader.Corrupt},
		{"encrypted.odt", encryptedODT, reader.Encrypted},
		{"encrypted.docx", cfb, reader.Encrypted},
		{"zero bytes", nil, reader.Empty},
		{"white space", []byte(" \n\t\n"), reader.Empty},
		{"html without text", []byte("<html><head><title>x</title><script>var a=1</script></head><body><nav>menu</nav></body></html>"), reader.Empty},
		{"image", png, reader.Unsupported},
		{"plain zip", zipOf(t, map[string]string{"content.xml": "<a/>"}), reader.Unsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readers.Read(ctx, c.data)
			got, ok := reader.ReasonOf(err)
			if !ok || got != c.want {
				t.Fatalf("error %v, want a skip with reason %s", err, c.want)
			}
			_, err = readers.ReadAt(ctx, bytes.NewReader(c.data), int64(len(c.data)))
			if got, ok := reader.ReasonOf(err); !ok || got != c.want {
				t.Fatalf("ReadAt: error %v, want a skip with reason %s", err, c.want)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		small := reader.NewMux(1000)
		_, err := small.Read(ctx, fixture(t, "raadsbesluit.md"))
		if got, _ := reader.ReasonOf(err); got != reader.TooLarge {
			t.Fatalf("error %v, want TooLarge", err)
		}
	})
}

// TestReadAtSameAsRead reads every document fixture from a file (ReadAt: a PDF through
// PDFium's file access, without a copy in memory) and from its bytes (Read): the documents
// are the same (issue 56).
func TestReadAtSameAsRead(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"raadsbesluit.pdf", "raadsbesluit-nobookmarks.pdf", "raadsbesluit.docx", "raadsbesluit.odt", "raadsbesluit.html", "raadsbesluit.md"} {
		t.Run(name, func(t *testing.T) {
			data := fixture(t, name)
			want, err := readers.Read(ctx, data)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join("..", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := readers.ReadAt(ctx, f, int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			a, _ := reader.Encode(want)
			b, _ := reader.Encode(got)
			if !bytes.Equal(a, b) {
				t.Errorf("ReadAt gave\n%s\nRead gave\n%s", b, a)
			}
		})
	}
}

// TestPoolConcurrent reads PDFs from more goroutines than the pool has instances; every
// read must give the same text.
func TestPoolConcurrent(t *testing.T) {
	data := fixture(t, "raadsbesluit.pdf")
	want, err := readers.Read(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := readers.Read(context.Background(), data)
			if err == nil && got.Text != want.Text {
				err = fmt.Errorf("concurrent read gave different text")
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
