package pdf

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/ocr/ocrtest"
)

// TestReadAtReopensBetweenOCRPages reads the two-page scanned resolution by OCR from a file
// with the document reopened before every page (reopenBytes 1): the document is the one read
// from the bytes in one open document, so pages are found again after a reopen.
func TestReadAtReopensBetweenOCRPages(t *testing.T) {
	ocrtest.Require(t)
	ctx := context.Background()
	eng, err := ocr.New(ocr.Options{Mode: ocr.Auto}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(ctx, Options{OCR: eng, CacheDir: filepath.Join(os.TempDir(), "ragops-test-pdfium-cache")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "ocr", "raadsbesluit-scan.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.Read(ctx, data, reader.MediaTypePDF)
	if err != nil {
		t.Fatal(err)
	}
	defer func(old int64) { reopenBytes = old }(reopenBytes)
	reopenBytes = 1
	got, err := r.ReadAt(ctx, bytes.NewReader(data), int64(len(data)), reader.MediaTypePDF)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reader.Encode(want)
	b, _ := reader.Encode(got)
	if !bytes.Equal(a, b) || got.OCR == nil || got.OCR.Pages != 2 {
		t.Errorf("reopened between pages:\n%s\nin one open document:\n%s", b, a)
	}
}
