package formats_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/ocr/ocrtest"
)

// ocrReaders starts the readers with OCR options o (Mode Auto when unset); it skips
// without Tesseract (fails under RAGOPS_REQUIRE_ALL=1).
func ocrReaders(t *testing.T, o ocr.Options) *formats.Readers {
	t.Helper()
	ocrtest.Require(t)
	if o.Mode == "" {
		o.Mode = ocr.Auto
	}
	// The compiled PDFium module is cached across the readers these tests start.
	po := pdfOptions()
	po.CacheDir = filepath.Join(os.TempDir(), "ragops-test-pdfium-cache")
	r, err := formats.New(context.Background(), formats.Options{PDF: po, OCR: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func ocrFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "ocr", name))
	if err != nil {
		t.Fatalf("fixture ocr/%s (made by hack/scan-fixtures/scan.sh fixtures): %v", name, err)
	}
	return b
}

// sourcePages returns the source text of a scanned fixture, one string per page (pages
// are separated by a form feed).
func sourcePages(t *testing.T, name string) []string {
	return strings.Split(string(ocrFixture(t, name)), "\f")
}

// A scanned Dutch council resolution (image-only PDF, 200 DPI, rotated, blurred, noisy,
// JPEG): read by OCR page by page with a low character error rate, its page boundaries
// kept, and the Heading strategy's decision headings found in the OCR text.
func TestOCRScannedPDFKeepsPagesAndHeadings(t *testing.T) {
	r := ocrReaders(t, ocr.Options{})
	doc := readScannedResolution(t, r, "raadsbesluit-scan.pdf")
	p2 := doc.Text[doc.Pages[1].Start:doc.Pages[1].End]
	h, err := chunkers.NewHeading(chunkers.RuneSizer{}, 400, 0, chunkers.HeadingOptions{NumberedSections: true})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := docchunk.Chunk(context.Background(), h, doc)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][2]int{}
	for _, c := range chunks {
		if len(c.HeadingPath) > 0 {
			first, last, _ := doc.PageRange(c.Start, c.End)
			found[c.HeadingPath[len(c.HeadingPath)-1]] = [2]int{first, last}
		}
	}
	for _, want := range []string{"Beslispunt 1", "Beslispunt 2", "Motivering", "Artikel 1 Inwerkingtreding", "Stemverhouding"} {
		if _, ok := found[want]; !ok {
			t.Errorf("no chunk under heading %q; headings found: %v; page 2 text:\n%s", want, found, p2)
		}
	}
	if pr := found["Stemverhouding"]; pr != [2]int{2, 2} {
		t.Errorf("Stemverhouding chunk on pages %v, want [2 2]", pr)
	}
}

// Two scanned SciFact abstracts: English text read with the nld+eng models.
func TestOCRScannedSciFact(t *testing.T) {
	r := ocrReaders(t, ocr.Options{})
	doc, err := r.Read(context.Background(), ocrFixture(t, "scifact-scan.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	src := sourcePages(t, "scifact-scan.txt")
	if doc.OCR == nil || doc.OCR.Pages != len(doc.Pages) || len(doc.Pages) < 2 {
		t.Fatalf("OCR stats %+v over %d pages", doc.OCR, len(doc.Pages))
	}
	cer := ocr.CharErrorRate(strings.Join(src, " "), doc.Text)
	t.Logf("scifact-scan.pdf: character error rate %.4f, OCR %+v", cer, *doc.OCR)
	if cer > 0.03 {
		t.Errorf("character error rate %.4f, want <= 0.03\n%s", cer, doc.Text)
	}
}

// Image documents (PNG, JPEG, bilevel TIFF with Group 4 compression) are one page each.
func TestOCRImageDocuments(t *testing.T) {
	r := ocrReaders(t, ocr.Options{})
	src := sourcePages(t, "raadsbesluit-scan.txt")[0]
	for _, name := range []string{"raadsbesluit-p1.png", "raadsbesluit-p1.jpg", "raadsbesluit-p1.tiff"} {
		t.Run(name, func(t *testing.T) {
			doc, err := r.Read(context.Background(), ocrFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if doc.OCR == nil || doc.OCR.Pages != 1 || len(doc.Pages) != 1 || doc.Pages[0].End != len(doc.Text) {
				t.Fatalf("OCR %+v, pages %+v (text %d bytes)", doc.OCR, doc.Pages, len(doc.Text))
			}
			cer := ocr.CharErrorRate(src, doc.Text)
			t.Logf("%s: character error rate %.4f", name, cer)
			if cer > 0.03 {
				t.Errorf("character error rate %.4f, want <= 0.03\n%s", cer, doc.Text)
			}
		})
	}
}

// readScannedResolution reads a scan of the two-page council resolution (name: a fixture
// holding both pages) and checks it: two pages read by OCR that cover the text, a character
// error rate of at most 0.03 against the source, and each page's range holding that page's
// text (the last heading of page 1 and the first words of page 2 on the right sides of the
// boundary).
func readScannedResolution(t *testing.T, r *formats.Readers, name string) reader.Document {
	t.Helper()
	doc, err := r.Read(context.Background(), ocrFixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if doc.OCR == nil || doc.OCR.Pages != 2 || len(doc.Pages) != 2 || doc.Pages[1].End != len(doc.Text) {
		t.Fatalf("OCR %+v, pages %+v (text %d bytes), want 2 pages read by OCR", doc.OCR, doc.Pages, len(doc.Text))
	}
	src := strings.TrimSpace(string(ocrFixture(t, "raadsbesluit-scan.txt")))
	cer := ocr.CharErrorRate(src, doc.Text)
	t.Logf("%s: character error rate %.4f, OCR %+v", name, cer, *doc.OCR)
	if cer > 0.03 {
		t.Errorf("character error rate %.4f, want <= 0.03\n%s", cer, doc.Text)
	}
	p1, p2 := doc.Text[doc.Pages[0].Start:doc.Pages[0].End], doc.Text[doc.Pages[1].Start:doc.Pages[1].End]
	if !strings.Contains(p1, "Beslispunt 1") || strings.Contains(p2, "Beslispunt 1") || !strings.Contains(p2, "Stemverhouding") {
		t.Errorf("page ranges do not match the pages:\npage 1: %q\npage 2: %q", p1, p2)
	}
	return doc
}

// A multi-page TIFF (both pages of the scanned resolution, bilevel Group 4, one IFD per
// page) is one document of two pages, each page's range holding its own text.
func TestOCRMultiPageTIFF(t *testing.T) {
	r := ocrReaders(t, ocr.Options{})
	readScannedResolution(t, r, "raadsbesluit-scan.tiff")
	// Over the page cap: refused before any page is read.
	capped := ocrReaders(t, ocr.Options{MaxPages: 1})
	if _, err := capped.Read(context.Background(), ocrFixture(t, "raadsbesluit-scan.tiff")); !isSkip(err, reader.TooLarge) {
		t.Errorf("2 pages under MaxPages 1: err %v, want TooLarge", err)
	}
}

func isSkip(err error, want reader.SkipReason) bool {
	got, ok := reader.ReasonOf(err)
	return ok && got == want
}

// brokenTIFFChain returns the two-page TIFF fixture with its first IFD's next-IFD offset
// pointing past the end of the file: the second page cannot be found.
func brokenTIFFChain(t *testing.T) []byte {
	b := bytes.Clone(ocrFixture(t, "raadsbesluit-scan.tiff"))
	if string(b[:4]) != "II*\x00" {
		t.Fatalf("fixture header %q, want little-endian TIFF", b[:4])
	}
	first := binary.LittleEndian.Uint32(b[4:])
	next := first + 2 + 12*uint32(binary.LittleEndian.Uint16(b[first:]))
	binary.LittleEndian.PutUint32(b[next:], uint32(len(b))+1000)
	return b
}

// The second pass runs exactly on pages under MinConfidence: a poor scan (2/3 resolution,
// heavy noise, JPEG quality 35) under an unreachable threshold of 99 gets it and stays
// under; the same page with threshold 1 does not.
func TestOCRSecondPassBelowMinConfidence(t *testing.T) {
	data := ocrFixture(t, "raadsbesluit-p1-poor.jpg")
	strict := ocrReaders(t, ocr.Options{MinConfidence: 99})
	doc, err := strict.Read(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if *doc.OCR != (reader.OCRStats{Pages: 1, SecondPass: 1, LowConfidence: 1}) {
		t.Errorf("threshold 99: OCR %+v, want 1 page, 1 second pass, 1 still low", *doc.OCR)
	}
	lax := ocrReaders(t, ocr.Options{MinConfidence: 1})
	doc, err = lax.Read(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if *doc.OCR != (reader.OCRStats{Pages: 1}) {
		t.Errorf("threshold 1: OCR %+v, want 1 page and no second pass", *doc.OCR)
	}
}

// Mode Always reads a born-digital PDF by OCR too, page for page.
func TestOCRModeAlways(t *testing.T) {
	r := ocrReaders(t, ocr.Options{Mode: ocr.Always})
	born, err := readers.Read(context.Background(), fixture(t, "raadsbesluit.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := r.Read(context.Background(), fixture(t, "raadsbesluit.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.OCR == nil || doc.OCR.Pages != len(born.Pages) || len(doc.Pages) != len(born.Pages) {
		t.Fatalf("OCR %+v over %d pages, want all %d", doc.OCR, len(doc.Pages), len(born.Pages))
	}
	if cer := ocr.CharErrorRate(born.Text, doc.Text); cer > 0.05 {
		t.Errorf("character error rate against the text layer %.4f, want <= 0.05", cer)
	}
}

// Bad input: each is skipped with its reason, within bounded time and memory (the
// 30,000 x 30,000 image is refused from its header: allocating its pixels would take
// 900 MB; the 2,000-page scan is refused before any page is rendered).
func TestOCRBadInputSkips(t *testing.T) {
	r := ocrReaders(t, ocr.Options{})
	cases := []struct {
		name string
		data []byte
		want reader.SkipReason
	}{
		{"corrupt.png", ocrFixture(t, "corrupt.png"), reader.Corrupt},
		{"truncated.png", ocrFixture(t, "truncated.png"), reader.Corrupt},
		{"zero bytes", nil, reader.Empty},
		{"png header only", ocrFixture(t, "raadsbesluit-p1.png")[:33], reader.Corrupt},
		{"huge-30000.png", ocrFixture(t, "huge-30000.png"), reader.TooLarge},
		{"blank-2000.pdf", ocrFixture(t, "blank-2000.pdf"), reader.TooLarge},
		{"encrypted-scan.pdf", ocrFixture(t, "encrypted-scan.pdf"), reader.Encrypted},
		{"TIFF chain past the end", brokenTIFFChain(t), reader.Corrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := r.Read(context.Background(), c.data)
			runtime.ReadMemStats(&after)
			if got, ok := reader.ReasonOf(err); !ok || got != c.want {
				t.Fatalf("err %v, want skip %s", err, c.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MB to refuse it, want <= 64 MB", alloc>>20)
			}
		})
	}
	if _, _, err := image.DecodeConfig(bytes.NewReader(ocrFixture(t, "huge-30000.png"))); err != nil {
		t.Fatalf("huge-30000.png must be a valid PNG header: %v", err)
	}
}

// The page cap and the document's time budget: 2,000 blank scanned pages under a cap of
// 2,000 and a budget of one second end as OCRFailed naming the budget, after at most a
// page or two (each Tesseract run is killed when the budget ends).
func TestOCRDocumentBudget(t *testing.T) {
	r := ocrReaders(t, ocr.Options{MaxPages: 2000, DocumentTimeout: time.Second})
	start := time.Now()
	_, err := r.Read(context.Background(), ocrFixture(t, "blank-2000.pdf"))
	if got, ok := reader.ReasonOf(err); !ok || got != reader.OCRFailed || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("err %v, want OCRFailed for the budget", err)
	}
	t.Logf("stopped after %s: %v", time.Since(start).Round(time.Millisecond), err)
}

// Without Tesseract (a binary that does not exist) under Auto, a scan is OCRFailed with
// the cause, and images too: counted, never silently dropped.
func TestOCRMissingTesseract(t *testing.T) {
	r, err := formats.New(context.Background(), formats.Options{PDF: pdfOptions(), OCR: ocr.Options{Mode: ocr.Auto, Binary: "/nonexistent/tesseract"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"raadsbesluit-scan.pdf", "raadsbesluit-p1.png"} {
		_, err := r.Read(context.Background(), ocrFixture(t, name))
		if got, ok := reader.ReasonOf(err); !ok || got != reader.OCRFailed || !strings.Contains(err.Error(), "tesseract not found") {
			t.Errorf("%s: err %v, want OCRFailed naming the missing tesseract", name, err)
		}
	}
	if _, err := formats.New(context.Background(), formats.Options{PDF: pdfOptions(), OCR: ocr.Options{Mode: ocr.Always, Binary: "/nonexistent/tesseract"}}); err == nil {
		t.Error("mode Always without tesseract: New succeeded, want an error")
	}
}
