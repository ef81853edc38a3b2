// Package formats wires every format reader of reader/... into one reader.Mux: plain
// text, Markdown and HTML (reader/markup), DOCX and ODT (reader/office), PDF (reader/pdf)
// and single-line BEIR corpus records (reader/beir).
package formats

import (
	"context"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/reader/markup"
	"github.com/ragops/ragops/reader/office"
	"github.com/ragops/ragops/reader/pdf"
)

// Options configures New.
type Options struct {
	// MaxBytes is the largest document read; larger ones are reader.TooLarge.
	// 0 means reader.DefaultMaxBytes.
	MaxBytes int
	// PDF configures the PDFium pool.
	PDF pdf.Options
}

// Readers is a reader.Mux over every format, owning the PDFium pool.
type Readers struct {
	*reader.Mux
	pdf *pdf.Reader
}

// New starts the PDFium pool (seconds: it compiles the WebAssembly module) and returns
// the readers. Call Close when done.
func New(ctx context.Context, opts Options) (*Readers, error) {
	p, err := pdf.New(ctx, opts.PDF)
	if err != nil {
		return nil, err
	}
	mux := reader.NewMux(opts.MaxBytes,
		markup.Text{}, markup.Markdown{}, markup.HTML{},
		office.DOCX{}, office.ODT{}, p, beir.Reader{})
	return &Readers{Mux: mux, pdf: p}, nil
}

// Close stops the PDFium pool.
func (r *Readers) Close() error { return r.pdf.Close() }
