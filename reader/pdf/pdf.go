// Package pdf reads PDF documents with PDFium compiled to WebAssembly
// (github.com/klippa-app/go-pdfium's webassembly mode, run by github.com/tetratelabs/wazero):
// no cgo and no system library.
//
// Text comes page by page in the order PDFium's text page gives it (content order, with
// the line and word breaks PDFium infers); lines are joined into paragraphs where the gap
// to the next line is at most about one line and the font does not change, and a line
// that holds only the page number at the top or bottom of a page is dropped. Each page's
// byte range is recorded in Document.Pages.
//
// The outline comes from the document outline (bookmarks) when the file has one: each
// bookmark becomes a heading of its depth, placed where its title occurs in the text of
// its destination page (or, if the title is not found there, at the start of that page).
// Without bookmarks, headings are inferred from typography: the most frequent font size
// is body text; lines set larger, or bold at body size and standing alone, are headings,
// ranked by size (then weight) into levels.
//
// With an OCR engine (Options.OCR, mode Auto), pages without characters that hold images
// (scanned pages) are rendered in grey by PDFium at the engine's DPI (lowered for pages
// over its pixel limit) and recognised by Tesseract (reader/ocr); each recognised
// paragraph is one block of the page, so page boundaries are kept as for born-digital
// pages, and Document.OCR counts the pages. Mode Always reads every page so.
//
// A file that PDFium cannot open is reader.Corrupt (reader.Encrypted when it needs a
// password); a file whose pages hold no characters is reader.NoTextLayer when they hold
// images (a scan, without an OCR engine) and reader.Empty otherwise. With OCR, a document
// with more pages to read than the engine's MaxPages is reader.TooLarge (before any is
// read), and one whose recognition fails or runs past DocumentTimeout is reader.OCRFailed.
//
// Starting PDFium is costly (compiling the 5.8 MB WebAssembly module), so a Reader keeps
// one compiled module and a pool of instances for its lifetime; create one Reader per
// process and Close it at the end.
package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Options configures a Reader.
type Options struct {
	// Workers is the number of PDFium instances, hence PDFs read at the same time;
	// 0 means 1.
	Workers int
	// CacheDir, when set, keeps wazero's compiled machine code there, so a later process
	// starts faster.
	CacheDir string
	// OCR, when set, reads pages by OCR as its mode says (reader/ocr): Auto the pages
	// without a text layer that hold images, Always every page. Nil reads none.
	OCR *ocr.Engine
	// OCRError, when set (and OCR nil), is why OCR is unavailable (Tesseract missing): a
	// PDF with pages that need OCR is then reader.OCRFailed with it, not NoTextLayer.
	OCRError error
}

// Reader reads PDFs through a pool of PDFium WebAssembly instances. It is safe for
// concurrent use.
type Reader struct {
	pool   pdfium.Pool
	cache  wazero.CompilationCache
	ocr    *ocr.Engine
	ocrErr error
}

// New compiles the PDFium module and starts the pool; this takes seconds, so do it once.
func New(ctx context.Context, opts Options) (*Reader, error) {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	rc := wazero.NewRuntimeConfig().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling)
	r := &Reader{ocr: opts.OCR, ocrErr: opts.OCRError}
	if opts.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("pdf: compilation cache %s: %w", opts.CacheDir, err)
		}
		r.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	pool, err := webassembly.Init(webassembly.Config{
		Context:       ctx,
		MinIdle:       1,
		MaxIdle:       opts.Workers,
		MaxTotal:      opts.Workers,
		ReuseWorkers:  true,
		RuntimeConfig: rc,
		FSConfig:      wazero.NewFSConfig(), // documents come as bytes or readers: no host files
		Stdout:        io.Discard,
		Stderr:        io.Discard,
	})
	if err != nil {
		return nil, fmt.Errorf("pdf: start PDFium: %w", err)
	}
	r.pool = pool
	return r, nil
}

// Close stops the pool.
func (r *Reader) Close() error {
	err := r.pool.Close()
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(context.Background()))
	}
	return err
}

// MediaTypes implements reader.FormatReader.
func (r *Reader) MediaTypes() []string { return []string{reader.MediaTypePDF} }

// Read implements reader.FormatReader. It waits for a free instance as long as ctx allows
// and checks ctx between pages; a PDFium call already running is not interrupted. An
// instance that panicked is discarded, not returned to the pool.
func (r *Reader) Read(ctx context.Context, data []byte, mediaType string) (reader.Document, error) {
	return r.read(ctx, &requests.OpenDocument{File: &data}, mediaType)
}

// ReadAt implements reader.FileFormatReader: PDFium reads the file through r as it needs
// its parts (FPDF_LoadCustomDocument), so neither the Go heap nor the instance's
// WebAssembly memory holds a copy of the whole file; a scan's page images are read one page
// at a time, when that page is rendered for OCR. Otherwise as Read; r must stay readable
// until ReadAt returns.
func (r *Reader) ReadAt(ctx context.Context, ra io.ReaderAt, size int64, mediaType string) (reader.Document, error) {
	if size <= 0 {
		return reader.Document{}, reader.Skip(reader.Empty, mediaType, nil, "0 bytes")
	}
	return r.read(ctx, &requests.OpenDocument{FileReader: io.NewSectionReader(ra, 0, size), FileReaderSize: size}, mediaType)
}

// read reads the document open opens.
func (r *Reader) read(ctx context.Context, open *requests.OpenDocument, mediaType string) (reader.Document, error) {
	inst, err := r.pool.GetInstanceWithContext(ctx)
	if err != nil {
		return reader.Document{}, fmt.Errorf("pdf: get a PDFium instance: %w", err)
	}
	broken := false
	defer func() {
		if broken {
			_ = inst.Kill()
		} else {
			_ = inst.Close()
		}
	}()
	doc, err := func() (d reader.Document, err error) {
		defer func() {
			if p := recover(); p != nil {
				broken = true
				err = reader.Skip(reader.Corrupt, mediaType, nil, "PDFium failed: %v", p)
			}
		}()
		return r.extract(ctx, inst, open, mediaType)
	}()
	return doc, err
}

// openError classifies an OpenDocument error.
func openError(err error, mediaType string) error {
	switch {
	case errors.Is(err, pdfiumerrors.ErrPassword), errors.Is(err, pdfiumerrors.ErrSecurity):
		return reader.Skip(reader.Encrypted, mediaType, err, "PDF needs a password")
	default:
		return reader.Skip(reader.Corrupt, mediaType, err, "PDFium cannot open the file")
	}
}
