package pdf

import (
	"context"
	"fmt"
	"image"
	"math"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/ocr"
)

// needsOCR reports whether page i (with chars characters and images image objects when it
// has no characters) is read by OCR under mode.
func needsOCR(mode ocr.Mode, chars, images int) bool {
	switch mode {
	case ocr.Always:
		return true
	case ocr.Auto:
		return chars == 0 && images > 0
	}
	return false
}

// renderDPI returns the DPI page (w x h points) is rendered at: want, lowered so that the
// image holds at most maxPixels pixels (a poster-sized page is read at a lower resolution
// rather than refused).
func renderDPI(w, h float64, want, maxPixels int) int {
	px := w / 72 * float64(want) * h / 72 * float64(want)
	if px <= float64(maxPixels) || px == 0 {
		return want
	}
	return max(1, int(float64(want)*math.Sqrt(float64(maxPixels)/px)))
}

// ocrPages renders and recognises the pages marked in need, replacing their lines with one
// block line per recognised paragraph. Errors are *reader.SkipError: TooLarge when more
// pages need OCR than allowed, OCRFailed when Tesseract fails, is missing or the
// document's time budget runs out.
//
// One page is in memory at a time: its grey image is copied out of the instance and its
// bitmap there freed before recognition, and a file-backed document is reopened once PDFium
// has read reopenBytes through it (see document), so a long scan's earlier images are not
// kept.
func (r *Reader) ocrPages(ctx context.Context, d *document, pages [][]line, need []int, mediaType string) (*reader.OCRStats, error) {
	if r.ocrErr != nil {
		return nil, reader.Skip(reader.OCRFailed, mediaType, r.ocrErr, "%d pages need OCR", len(need))
	}
	o := r.ocr.Options()
	if len(need) > o.MaxPages {
		return nil, reader.Skip(reader.TooLarge, mediaType, nil, "%d pages need OCR, limit %d", len(need), o.MaxPages)
	}
	octx, cancel := context.WithTimeout(ctx, o.DocumentTimeout)
	defer cancel()
	stats := &reader.OCRStats{}
	for _, i := range need {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if octx.Err() != nil {
			return nil, reader.Skip(reader.OCRFailed, mediaType, octx.Err(),
				"OCR ran past the document's budget of %s after %d of %d pages", o.DocumentTimeout, stats.Pages, len(need))
		}
		if err := d.refresh(); err != nil {
			return nil, reader.Skip(reader.Corrupt, mediaType, err, "reopen before page %d", i+1)
		}
		img, dpi, err := renderGray(d.inst, d.doc, i, o.DPI, o.MaxPixels)
		if err != nil {
			return nil, reader.Skip(reader.Corrupt, mediaType, err, "render page %d", i+1)
		}
		res, err := r.ocr.Page(octx, img, dpi)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if octx.Err() != nil {
				return nil, reader.Skip(reader.OCRFailed, mediaType, octx.Err(),
					"OCR ran past the document's budget of %s after %d of %d pages", o.DocumentTimeout, stats.Pages, len(need))
			}
			return nil, reader.Skip(reader.OCRFailed, mediaType, err, "page %d", i+1)
		}
		lines := make([]line, 0, len(res.Blocks))
		for _, b := range res.Blocks {
			lines = append(lines, line{text: b, block: true})
		}
		pages[i] = dropPageNumber(lines, i+1)
		stats.Pages++
		if res.SecondPass {
			stats.SecondPass++
		}
		if res.LowConfidence {
			stats.LowConfidence++
		}
	}
	return stats, nil
}

// renderGray renders page i in grey at dpi (lowered to keep within maxPixels) and returns
// a copy of the image outside WebAssembly memory and the DPI used.
func renderGray(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i, dpi, maxPixels int) (*image.Gray, int, error) {
	if sz, err := inst.FPDF_GetPageSizeByIndex(&requests.FPDF_GetPageSizeByIndex{Document: doc, Index: i}); err == nil {
		dpi = renderDPI(sz.Width, sz.Height, dpi, maxPixels)
	}
	rp, err := inst.RenderPageInDPI(&requests.RenderPageInDPI{
		Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc, Index: i}},
		DPI:  dpi, ImageFormat: requests.RenderImageFormatGrayscale,
	})
	if err != nil {
		return nil, 0, err
	}
	defer rp.Cleanup()
	src, ok := rp.Result.RenderedImage.(*image.Gray)
	if !ok {
		return nil, 0, fmt.Errorf("PDFium rendered %T, want *image.Gray", rp.Result.RenderedImage)
	}
	cp := image.NewGray(src.Bounds())
	for y := src.Rect.Min.Y; y < src.Rect.Max.Y; y++ {
		copy(cp.Pix[cp.PixOffset(src.Rect.Min.X, y):][:src.Rect.Dx()], src.Pix[src.PixOffset(src.Rect.Min.X, y):])
	}
	return cp, dpi, nil
}
