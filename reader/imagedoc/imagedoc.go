// Package imagedoc reads scanned pages stored as images (PNG, JPEG, TIFF) as documents,
// recognised by OCR (reader/ocr): one page per image, and one page per image file
// directory (IFD) of a multi-page TIFF (TIFF 6.0 section 2), in file order.
//
// Bounds: each page's width and height are read from its header (image.DecodeConfig)
// and a page over the engine's MaxPixels is reader.TooLarge before any pixel is
// decoded, so memory stays within about twice MaxPixels bytes plus the file (the decoded
// page and its grey copy; a multi-page TIFF adds one copy of the file); a TIFF of more
// pages than the engine's MaxPages is reader.TooLarge before any is read. Time is bounded
// by the engine's PageTimeout per page (twice, with the second pass) and DocumentTimeout
// per document. A page whose header or pixels do not decode (corrupt, truncated) makes
// the document reader.Corrupt and a Tesseract failure reader.OCRFailed, naming the page:
// no page is ever dropped from a document that is read.
package imagedoc

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg" // register the JPEG decoder
	_ "image/png"  // register the PNG decoder

	_ "golang.org/x/image/tiff" // register the TIFF decoder

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/ocr"
)

// Reader is a reader.FormatReader for image documents.
type Reader struct {
	// OCR recognises the pages; nil makes every image reader.OCRFailed with Err.
	OCR *ocr.Engine
	// Err is why OCR is unavailable when OCR is nil.
	Err error
}

// MediaTypes implements reader.FormatReader.
func (Reader) MediaTypes() []string {
	return []string{reader.MediaTypePNG, reader.MediaTypeJPEG, reader.MediaTypeTIFF}
}

// Read implements reader.FormatReader: one page per image (per IFD of a TIFF), each
// recognised paragraph one block.
func (r Reader) Read(ctx context.Context, data []byte, mediaType string) (reader.Document, error) {
	if r.OCR == nil {
		return reader.Document{}, reader.Skip(reader.OCRFailed, mediaType, r.Err, "image documents need OCR")
	}
	o := r.OCR.Options()
	pages := [][]byte{data}
	if mediaType == reader.MediaTypeTIFF {
		var err error
		if pages, err = tiffPageFiles(data); err != nil {
			return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "TIFF directories")
		}
		if len(pages) > o.MaxPages {
			return reader.Document{}, reader.Skip(reader.TooLarge, mediaType, nil, "%d pages need OCR, limit %d", len(pages), o.MaxPages)
		}
	}
	octx, cancel := context.WithTimeout(ctx, o.DocumentTimeout)
	defer cancel()
	b := &reader.Builder{}
	stats := &reader.OCRStats{}
	for i, page := range pages {
		if err := ctx.Err(); err != nil {
			return reader.Document{}, err
		}
		res, err := r.page(octx, page, mediaType, i, len(pages))
		if err != nil {
			if ctx.Err() != nil {
				return reader.Document{}, ctx.Err()
			}
			if octx.Err() != nil {
				return reader.Document{}, reader.Skip(reader.OCRFailed, mediaType, octx.Err(),
					"OCR ran past the document's budget of %s after %d of %d pages", o.DocumentTimeout, i, len(pages))
			}
			return reader.Document{}, err
		}
		b.StartPage(i + 1)
		for _, blk := range res.Blocks {
			b.Paragraph(blk)
		}
		stats.Pages++
		if res.SecondPass {
			stats.SecondPass++
		}
		if res.LowConfidence {
			stats.LowConfidence++
		}
	}
	doc := b.Finish(mediaType)
	doc.OCR = stats
	return doc, nil
}

// page decodes and recognises page i (0-based) of n, an image file of its own. Errors are
// *reader.SkipError (TooLarge, Corrupt, OCRFailed) naming the page when n > 1, or the
// context's error.
func (r Reader) page(ctx context.Context, data []byte, mediaType string, i, n int) (ocr.Result, error) {
	where := ""
	if n > 1 {
		where = fmt.Sprintf("page %d of %d: ", i+1, n)
	}
	o := r.OCR.Options()
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return ocr.Result{}, reader.Skip(reader.Corrupt, mediaType, err, "%simage header", where)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > int64(o.MaxPixels) {
		return ocr.Result{}, reader.Skip(reader.TooLarge, mediaType, nil,
			"%s%d x %d pixels, limit %d pixels", where, cfg.Width, cfg.Height, o.MaxPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return ocr.Result{}, reader.Skip(reader.Corrupt, mediaType, err, "%simage data", where)
	}
	gray, ok := img.(*image.Gray)
	if !ok {
		gray = image.NewGray(img.Bounds())
		draw.Draw(gray, gray.Bounds(), img, img.Bounds().Min, draw.Src)
	}
	res, err := r.OCR.Page(ctx, gray, 0)
	if err != nil {
		if ctx.Err() != nil {
			return ocr.Result{}, ctx.Err()
		}
		return ocr.Result{}, reader.Skip(reader.OCRFailed, mediaType, err, "%s%d x %d pixels", where, cfg.Width, cfg.Height)
	}
	return res, nil
}

// tiffPageFiles returns one TIFF file per page of data: data itself for a single page,
// else for each IFD a copy of data whose header points at that IFD. TIFF offsets are
// absolute, so each copy is a valid single-page file for decoders that read the first
// IFD only (golang.org/x/image/tiff). Errors: a chain that leaves the file or loops.
func tiffPageFiles(data []byte) ([][]byte, error) {
	offs, bo, err := tiffIFDs(data)
	if err != nil || len(offs) <= 1 {
		return [][]byte{data}, err
	}
	files := make([][]byte, len(offs))
	for i, off := range offs {
		f := bytes.Clone(data)
		bo.PutUint32(f[4:8], uint32(off))
		files[i] = f
	}
	return files, nil
}

// tiffPages counts the image file directories (pages) of a TIFF file; 0 when the header
// is not TIFF or the chain is broken.
func tiffPages(data []byte) int {
	offs, _, err := tiffIFDs(data)
	if err != nil {
		return 0
	}
	return len(offs)
}

// maxTIFFPages bounds the IFD chain walked (a loop or a hostile file).
const maxTIFFPages = 100_000

// tiffIFDs follows the chain of image file directories from the header (TIFF 6.0 section
// 2: byte order "II" or "MM", 42, the first IFD's offset; each IFD is a 2-byte entry
// count, 12-byte entries and the next IFD's offset, 0 at the end) and returns their
// offsets; none when data is not TIFF.
func tiffIFDs(data []byte) ([]int64, binary.ByteOrder, error) {
	if len(data) < 8 {
		return nil, nil, nil
	}
	var bo binary.ByteOrder
	switch string(data[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return nil, nil, nil
	}
	var offs []int64
	seen := map[int64]bool{}
	for off := int64(bo.Uint32(data[4:8])); off != 0; {
		if off+2 > int64(len(data)) {
			return nil, bo, fmt.Errorf("IFD %d at offset %d is past the end of the file (%d bytes)", len(offs)+1, off, len(data))
		}
		if seen[off] || len(offs) == maxTIFFPages {
			return nil, bo, fmt.Errorf("IFD chain loops or holds over %d directories", maxTIFFPages)
		}
		seen[off] = true
		next := off + 2 + 12*int64(bo.Uint16(data[off:]))
		if next+4 > int64(len(data)) {
			return nil, bo, fmt.Errorf("IFD %d at offset %d runs past the end of the file (%d bytes)", len(offs)+1, off, len(data))
		}
		offs = append(offs, off)
		off = int64(bo.Uint32(data[next:]))
	}
	return offs, bo, nil
}
