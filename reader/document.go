package reader

import (
	"context"
	"io"
	"sort"
	"strings"
)

// Document is one document's extracted text and structure.
type Document struct {
	// MediaType is the sniffed media type the document was read as, e.g. "application/pdf".
	MediaType string `json:"mediaType"`
	// Text is the document text in UTF-8, laid out as the package doc describes.
	Text string `json:"text"`
	// Outline lists the headings in document order.
	Outline []Heading `json:"outline,omitempty"`
	// Pages lists page boundaries in order; empty for formats without pages.
	Pages []Page `json:"pages,omitempty"`
	// OCR counts the pages whose text came from OCR; nil when none did.
	OCR *OCRStats `json:"ocr,omitempty"`
	// Encoding names the encoding a text or Markdown file was decoded from when it was not
	// UTF-8 (EncodingUTF16, EncodingWindows1252; see DecodeTextEncoding); empty for UTF-8
	// and for the other formats, which declare their own.
	Encoding string `json:"encoding,omitempty"`
	// Source says which corpus document this is (set by the corpus walk, not by the format
	// readers, whose output depends on the bytes only); nil outside a corpus.
	Source *Source `json:"source,omitempty"`
	// Metadata holds the document's fields as its format states them, under the keys the
	// package doc lists (MetaTitle, MetaAuthor, MetaCreated, MetaModified, and the
	// MetaNamedPrefix and MetaFrontMatterPrefix families); nil when the format holds none.
	// Values are JSON values (string, float64, bool, []any, map[string]any), so they
	// survive Encode and Decode unchanged.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Source identifies a document of a corpus by its raw bytes.
type Source struct {
	// ID is the document's ID in the corpus (a path, or a BEIR "_id").
	ID string `json:"id"`
	// Hash is the first 16 hex digits of SHA-256 over the raw bytes (corpus.Document.Hash).
	Hash string `json:"hash"`
	// Size is the raw size in bytes.
	Size int64 `json:"size"`
}

// OCRStats counts a document's pages read by OCR (reader/ocr).
type OCRStats struct {
	// Pages read by OCR.
	Pages int `json:"pages"`
	// SecondPass counts the pages whose first pass had a mean word confidence under the
	// threshold and were recognised a second time.
	SecondPass int `json:"secondPass,omitempty"`
	// LowConfidence counts the pages still under the threshold after the second pass.
	LowConfidence int `json:"lowConfidence,omitempty"`
}

// Add adds o's counts to s.
func (s *OCRStats) Add(o OCRStats) {
	s.Pages += o.Pages
	s.SecondPass += o.SecondPass
	s.LowConfidence += o.LowConfidence
}

// Heading is one entry of a document's outline.
type Heading struct {
	// Level is 1 for the top level (h1, "# ", Heading 1), up to 6 or more for deeper levels.
	Level int `json:"level"`
	// Title is the heading text with whitespace collapsed.
	Title string `json:"title"`
	// Start is the byte offset in Text where the heading's line starts.
	// End is the byte offset where its section ends: the start of the next heading of the
	// same or a higher level (smaller Level), or len(Text). [Start, End) thus covers the
	// heading and everything below it.
	Start int `json:"start"`
	End   int `json:"end"`
}

// Page is one page's byte range [Start, End) in Document.Text.
type Page struct {
	// Number is the 1-based page number (the page's position in the file, not its label).
	Number int `json:"number"`
	Start  int `json:"start"`
	End    int `json:"end"`
}

// PageRange returns the first and last page numbers that the byte span [start, end)
// overlaps, for citing a chunk; ok is false when the document has no pages or the span
// lies outside all of them.
func (d Document) PageRange(start, end int) (first, last int, ok bool) {
	if end <= start {
		end = start + 1
	}
	i := sort.Search(len(d.Pages), func(i int) bool { return d.Pages[i].End > start })
	for ; i < len(d.Pages) && d.Pages[i].Start < end; i++ {
		if !ok {
			first, ok = d.Pages[i].Number, true
		}
		last = d.Pages[i].Number
	}
	return first, last, ok
}

// TitleEnd returns the end of heading i's own line: the offset of the first newline at or
// after its Start, capped at its End. [Outline[i].Start, TitleEnd(i)) is the heading text
// as it stands in Text (the span chunkers.OutlineEntry expects).
func (d Document) TitleEnd(i int) int {
	h := d.Outline[i]
	if j := strings.IndexByte(d.Text[h.Start:h.End], '\n'); j >= 0 {
		return h.Start + j
	}
	return h.End
}

// HeadingPath returns the titles of the headings whose sections contain byte offset off,
// outermost first.
func (d Document) HeadingPath(off int) []string {
	var path []string
	for _, h := range d.Outline {
		if h.Start <= off && off < h.End {
			path = append(path, h.Title)
		}
	}
	return path
}

// FormatReader reads one family of formats.
type FormatReader interface {
	// MediaTypes lists the media types (as Sniff returns them) this reader handles.
	MediaTypes() []string
	// Read extracts data, whose sniffed media type is mediaType. Errors that mean the
	// document should be skipped are *SkipError.
	Read(ctx context.Context, data []byte, mediaType string) (Document, error)
}

// FileFormatReader is a FormatReader that also reads a document from a file without a copy
// of all of it in memory: r holds the document's size bytes and is read only where the
// format needs it (the PDF reader hands it to PDFium, which reads the objects of the page
// at hand). Results and errors are Read's for the same bytes.
type FileFormatReader interface {
	FormatReader
	ReadAt(ctx context.Context, r io.ReaderAt, size int64, mediaType string) (Document, error)
}
