// Package formats wires every format reader of reader/... into one reader.Mux: plain
// text, Markdown and HTML (reader/markup), DOCX and ODT (reader/office), PDF (reader/pdf),
// single-line BEIR corpus records (reader/beir) and, with OCR on, scanned pages in PDFs
// and image documents (reader/ocr, reader/imagedoc).
package formats

import (
	"context"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/reader/imagedoc"
	"github.com/ragops/ragops/reader/markup"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/office"
	"github.com/ragops/ragops/reader/pdf"
)

// Options configures New.
type Options struct {
	// MaxBytes is the largest document read; larger ones are reader.TooLarge.
	// 0 means reader.DefaultMaxBytes.
	MaxBytes int
	// PDF configures the PDFium pool (its OCR fields are set from OCR).
	PDF pdf.Options
	// OCR configures text recognition of scanned pages; Mode "" or Never reads none
	// (PDFs without a text layer are reader.NoTextLayer, images reader.Unsupported).
	// Under Auto a missing Tesseract makes the documents that need it reader.OCRFailed;
	// under Always New fails.
	OCR ocr.Options
}

// Readers is a reader.Mux over every format, owning the PDFium pool.
type Readers struct {
	*reader.Mux
	pdf *pdf.Reader
}

// New starts the PDFium pool (seconds: it compiles the WebAssembly module) and returns
// the readers. Call Close when done.
func New(ctx context.Context, opts Options) (*Readers, error) {
	readers := []reader.FormatReader{markup.Text{}, markup.Markdown{}, markup.HTML{}, office.DOCX{}, office.ODT{}, beir.Reader{}}
	if o := opts.OCR.WithDefaults(); o.Mode != ocr.Never {
		engine, err := ocr.New(o)
		if err != nil && o.Mode == ocr.Always {
			return nil, err
		}
		opts.PDF.OCR, opts.PDF.OCRError = engine, err
		readers = append(readers, imagedoc.Reader{OCR: engine, Err: err})
	}
	p, err := pdf.New(ctx, opts.PDF)
	if err != nil {
		return nil, err
	}
	mux := reader.NewMux(opts.MaxBytes, append(readers, p)...)
	return &Readers{Mux: mux, pdf: p}, nil
}

// Close stops the PDFium pool.
func (r *Readers) Close() error { return r.pdf.Close() }
