// Package ocr recognises the text of page images with Tesseract 5 (github.com/tesseract-ocr),
// run through its command line with TSV output: one row per word with its bounding box and
// confidence (0-100). Words are grouped into the paragraphs Tesseract's layout analysis
// finds, in its reading order.
//
// A page whose mean word confidence is under Options.MinConfidence is recognised a second
// time from a cleaned-up image (3x3 median filter against speckles, then Otsu binarisation:
// N. Otsu, "A threshold selection method from gray-level histograms", IEEE SMC 9(1), 1979)
// with page segmentation mode 4 (one column of text of variable sizes) instead of 3 (fully
// automatic); the pass with the better mean confidence is kept, as the scanned-archive
// studies that ran OCR twice on uncertain pages did.
//
// Bounds: Tesseract runs with OMP_THREAD_LIMIT=1 (one core per page) and is killed after
// Options.PageTimeout; images over Options.MaxPixels are refused by the callers before
// decoding (see reader/imagedoc) or rendered at a lower resolution (reader/pdf).
package ocr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragops/ragops/internal/tracing"
)

// Mode says which pages are read by OCR.
type Mode string

// The modes.
const (
	// Auto reads by OCR the PDF pages that have no text layer but hold images, and image
	// documents.
	Auto Mode = "Auto"
	// Always reads every PDF page by OCR, ignoring its text layer, and image documents.
	Always Mode = "Always"
	// Never reads no page by OCR: PDFs without a text layer are reader.NoTextLayer and
	// images reader.Unsupported.
	Never Mode = "Never"
)

// Defaults of Options.
const (
	DefaultDPI             = 300
	DefaultMinConfidence   = 70
	DefaultMaxPages        = 500
	DefaultMaxPixels       = 60_000_000 // an A4 page at 300 DPI is 8.7 megapixels, A3 17.4
	DefaultPageTimeout     = 2 * time.Minute
	DefaultDocumentTimeout = 30 * time.Minute
)

// EnvTesseract names the Tesseract binary when set (hack/prepare.d/tesseract.sh prints it).
const EnvTesseract = "RAGOPS_TESSERACT"

// languageRe is a Tesseract language (traineddata) code: nld, eng, deu, chi_sim, ...
var languageRe = regexp.MustCompile(`^[a-z]{3}(_[a-z]+)?$`)

// Options configure an Engine.
type Options struct {
	// Mode says which pages are read by OCR; "" means Never.
	Mode Mode
	// Languages are Tesseract language codes, combined in this order ("nld+eng"); empty
	// means nld and eng.
	Languages []string
	// DPI is the resolution PDF pages are rendered at (pixels per inch); 0 means 300.
	DPI int
	// MinConfidence (0-100): pages whose mean word confidence is under it get the second
	// pass; 0 means 70.
	MinConfidence float64
	// MaxPages is the most pages of one document read by OCR; a document needing more is
	// reader.TooLarge. 0 means 500.
	MaxPages int
	// MaxPixels is the most pixels of one page image; 0 means 60 million (about 60 MB of
	// grey pixels).
	MaxPixels int
	// PageTimeout bounds one Tesseract run; 0 means 2 minutes.
	PageTimeout time.Duration
	// DocumentTimeout bounds the OCR of one document; 0 means 30 minutes.
	DocumentTimeout time.Duration
	// Binary is the tesseract executable; empty means $RAGOPS_TESSERACT, else "tesseract"
	// on PATH.
	Binary string
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Mode == "" {
		o.Mode = Never
	}
	if len(o.Languages) == 0 {
		o.Languages = []string{"nld", "eng"}
	}
	if o.DPI <= 0 {
		o.DPI = DefaultDPI
	}
	if o.MinConfidence <= 0 {
		o.MinConfidence = DefaultMinConfidence
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.PageTimeout <= 0 {
		o.PageTimeout = DefaultPageTimeout
	}
	if o.DocumentTimeout <= 0 {
		o.DocumentTimeout = DefaultDocumentTimeout
	}
	if o.Binary == "" {
		o.Binary = os.Getenv(EnvTesseract)
	}
	if o.Binary == "" {
		o.Binary = "tesseract"
	}
	return o
}

// Engine runs Tesseract. It is safe for concurrent use; each page is one process.
type Engine struct {
	opts Options
	bin  string
}

// New checks the options and finds the Tesseract binary. Errors: Mode Never (no engine
// is needed), a bad language code, or no tesseract executable.
func New(opts Options) (*Engine, error) {
	opts = opts.WithDefaults()
	switch opts.Mode {
	case Auto, Always:
	case Never:
		return nil, errors.New("ocr: mode Never needs no engine")
	default:
		return nil, fmt.Errorf("ocr: unknown mode %q (Auto, Always or Never)", opts.Mode)
	}
	for _, l := range opts.Languages {
		if !languageRe.MatchString(l) {
			return nil, fmt.Errorf("ocr: language %q is not a Tesseract language code such as nld or chi_sim", l)
		}
	}
	bin, err := exec.LookPath(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("ocr: tesseract not found (install tesseract-ocr, see hack/prepare.d/tesseract.sh): %w", err)
	}
	return &Engine{opts: opts, bin: bin}, nil
}

// Options returns the engine's options with defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Result is one page's recognised text.
type Result struct {
	// Blocks are the page's paragraphs in reading order, whitespace collapsed; a short
	// first line of a paragraph (a heading set above its text) is a block of its own.
	Blocks []string
	// Words is the number of words recognised.
	Words int
	// Confidence is the mean word confidence (0-100) of the kept pass; 0 when no word was
	// found.
	Confidence float64
	// SecondPass is true when the first pass was under MinConfidence and a second pass ran;
	// LowConfidence when the kept pass is still under it.
	SecondPass, LowConfidence bool
}

// Page recognises one page image; dpi is its resolution in pixels per inch, 0 when
// unknown (Tesseract then estimates it from the text height). Errors: Tesseract failed,
// ran past PageTimeout, or ctx ended.
func (e *Engine) Page(ctx context.Context, img *image.Gray, dpi int) (res Result, err error) {
	ctx, span := tracing.Start(ctx, SpanPage, trace.WithAttributes(attribute.Int("ragops.dpi", dpi)))
	defer func() { endPage(span, res, err) }()
	first, err := e.run(ctx, img, dpi, 3)
	if err != nil {
		return Result{}, err
	}
	if first.Words == 0 || first.Confidence >= e.opts.MinConfidence {
		return first, nil
	}
	second, err := e.run(ctx, Clean(img), dpi, 4)
	if err != nil {
		return Result{}, err
	}
	best := first
	if second.Confidence > first.Confidence {
		best = second
	}
	best.SecondPass = true
	best.LowConfidence = best.Confidence < e.opts.MinConfidence
	return best, nil
}

// run recognises img with page segmentation mode psm.
func (e *Engine) run(ctx context.Context, img *image.Gray, dpi, psm int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.PageTimeout)
	defer cancel()
	args := []string{"stdin", "stdout", "-l", strings.Join(e.opts.Languages, "+"), "--psm", strconv.Itoa(psm)}
	if dpi > 0 {
		args = append(args, "--dpi", strconv.Itoa(dpi))
	}
	args = append(args, "tsv")
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	cmd.Stdin = bytes.NewReader(PGM(img))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("ocr: tesseract ran past %s: %w", e.opts.PageTimeout, ctx.Err())
		}
		return Result{}, fmt.Errorf("ocr: tesseract: %w: %s", err, lastLine(stderr.String()))
	}
	words, err := ParseTSV(out.Bytes())
	if err != nil {
		return Result{}, err
	}
	r := Result{Blocks: Blocks(words), Words: len(words)}
	if len(words) > 0 {
		sum := 0.0
		for _, w := range words {
			sum += w.Confidence
		}
		r.Confidence = sum / float64(len(words))
	}
	r.LowConfidence = r.Words > 0 && r.Confidence < e.opts.MinConfidence
	return r, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// PGM encodes img as a binary PGM (Netpbm P5), the cheapest format Tesseract (Leptonica)
// reads from standard input.
func PGM(img *image.Gray) []byte {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	hdr := fmt.Sprintf("P5\n%d %d\n255\n", w, h)
	out := make([]byte, 0, len(hdr)+w*h)
	out = append(out, hdr...)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		i := img.PixOffset(b.Min.X, y)
		out = append(out, img.Pix[i:i+w]...)
	}
	return out
}

// SpanPage is the span of one page's recognition (Page).
const SpanPage = "ocr.page"

// endPage sets a page's words and confidence on its span, marks an error and ends it.
func endPage(span trace.Span, res Result, err error) {
	span.SetAttributes(attribute.Int("ragops.words", res.Words), attribute.Float64("ragops.confidence", res.Confidence),
		attribute.Bool("ragops.second_pass", res.SecondPass))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
