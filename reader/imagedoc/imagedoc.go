// Package imagedoc reads scanned pages stored as images (PNG, JPEG, TIFF) as documents of
// one page, recognised by OCR (reader/ocr).
//
// Bounds: the image's width and height are read from its header (image.DecodeConfig)
// and an image over the engine's MaxPixels is reader.TooLarge before any pixel is
// decoded, so memory stays within about twice MaxPixels bytes plus the file (the decoded
// image and its grey copy); time is bounded by the engine's PageTimeout (twice, with the
// second pass). A file whose header or pixels do not decode (corrupt, truncated) is
// reader.Corrupt; a multi-page TIFF is reader.Unsupported (its later pages would be lost);
// a Tesseract failure is reader.OCRFailed.
package imagedoc

import (
	"bytes"
	"context"
	"encoding/binary"
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

// Read implements reader.FormatReader: one page, each recognised paragraph one block.
func (r Reader) Read(ctx context.Context, data []byte, mediaType string) (reader.Document, error) {
	if r.OCR == nil {
		return reader.Document{}, reader.Skip(reader.OCRFailed, mediaType, r.Err, "image documents need OCR")
	}
	o := r.OCR.Options()
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "image header")
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > int64(o.MaxPixels) {
		return reader.Document{}, reader.Skip(reader.TooLarge, mediaType, nil,
			"%d x %d pixels, limit %d pixels", cfg.Width, cfg.Height, o.MaxPixels)
	}
	if mediaType == reader.MediaTypeTIFF {
		if n := tiffPages(data); n > 1 {
			return reader.Document{}, reader.Skip(reader.Unsupported, mediaType, nil, "multi-page TIFF (%d pages): convert it to PDF", n)
		}
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "image data")
	}
	gray, ok := img.(*image.Gray)
	if !ok {
		gray = image.NewGray(img.Bounds())
		draw.Draw(gray, gray.Bounds(), img, img.Bounds().Min, draw.Src)
	}
	res, err := r.OCR.Page(ctx, gray, 0)
	if err != nil {
		if ctx.Err() != nil {
			return reader.Document{}, ctx.Err()
		}
		return reader.Document{}, reader.Skip(reader.OCRFailed, mediaType, err, "%d x %d pixels", cfg.Width, cfg.Height)
	}
	b := &reader.Builder{}
	b.StartPage(1)
	for _, blk := range res.Blocks {
		b.Paragraph(blk)
	}
	doc := b.Finish(mediaType)
	doc.OCR = &reader.OCRStats{Pages: 1}
	if res.SecondPass {
		doc.OCR.SecondPass = 1
	}
	if res.LowConfidence {
		doc.OCR.LowConfidence = 1
	}
	return doc, nil
}

// tiffPages counts the image file directories (pages) of a TIFF file by following their
// chain (TIFF 6.0 section 2), up to 1,000; 0 when the header is not TIFF.
func tiffPages(data []byte) int {
	if len(data) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(data[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int64(bo.Uint32(data[4:8]))
	n := 0
	for off != 0 && n < 1000 {
		if off+2 > int64(len(data)) {
			break
		}
		entries := int64(bo.Uint16(data[off:]))
		next := off + 2 + 12*entries
		if next+4 > int64(len(data)) {
			break
		}
		n++
		off = int64(bo.Uint32(data[next:]))
	}
	return n
}
