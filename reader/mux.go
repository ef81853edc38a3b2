package reader

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// DefaultMaxBytes is the size limit a Mux uses when none is given: 512 MiB, the default of
// Corpus spec.maxDocumentBytes (a 300-page scanned PDF, see its doc comment).
const DefaultMaxBytes = 512 << 20

// Mux sniffs a document's media type and hands it to the FormatReader registered for it.
type Mux struct {
	readers  map[string]FormatReader
	maxBytes int
}

// NewMux returns a Mux over readers; maxBytes <= 0 means DefaultMaxBytes. A media type
// claimed by two readers goes to the later one.
func NewMux(maxBytes int, readers ...FormatReader) *Mux {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	m := &Mux{readers: map[string]FormatReader{}, maxBytes: maxBytes}
	for _, r := range readers {
		for _, mt := range r.MediaTypes() {
			m.readers[mt] = r
		}
	}
	return m
}

// Read sniffs data and extracts it. It returns a *SkipError for documents that are too
// large, empty (no bytes, only white space, or no text after extraction), of a media type
// no reader handles, or that the format reader rejects.
func (m *Mux) Read(ctx context.Context, data []byte) (Document, error) {
	if len(data) > m.maxBytes {
		return Document{}, TooLargeSkip("", int64(len(data)), int64(m.maxBytes), "")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Document{}, Skip(Empty, "", nil, "%d bytes of white space or none", len(data))
	}
	mt := Sniff(data)
	switch mt {
	case MediaTypeOOXMLEncrypted:
		return Document{}, Skip(Encrypted, mt, nil, "Office document encrypted with a password")
	}
	r, ok := m.readers[mt]
	if !ok {
		return Document{}, Skip(Unsupported, mt, nil, "no reader for media type %q", mt)
	}
	doc, err := r.Read(ctx, data, mt)
	return finish(doc, err, mt)
}

// sniffHeadBytes is how much of a file ReadAt reads to tell a PDF: Sniff looks for its
// magic in the first 1,024 bytes, before any other test.
const sniffHeadBytes = 1024

// ReadAt reads the document of size bytes in r as Read reads its bytes, with the same
// results and errors. A PDF whose reader is a FileFormatReader is read from r without a copy
// of the file in memory; every other document is read into memory first. Errors reading r
// are returned as they are.
func (m *Mux) ReadAt(ctx context.Context, r io.ReaderAt, size int64) (Document, error) {
	if size > int64(m.maxBytes) {
		return Document{}, TooLargeSkip("", size, int64(m.maxBytes), "")
	}
	head := make([]byte, min(size, sniffHeadBytes))
	if _, err := io.ReadFull(io.NewSectionReader(r, 0, size), head); err != nil {
		return Document{}, err
	}
	if Sniff(head) == MediaTypePDF {
		if fr, ok := m.readers[MediaTypePDF].(FileFormatReader); ok {
			doc, err := fr.ReadAt(ctx, r, size, MediaTypePDF)
			return finish(doc, err, MediaTypePDF)
		}
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(r, 0, size), data); err != nil {
		return Document{}, err
	}
	return m.Read(ctx, data)
}

// finish checks what the reader of media type mt returned: skips pass as they are, other
// errors are wrapped, a document without text is Empty.
func finish(doc Document, err error, mt string) (Document, error) {
	if err != nil {
		if _, isSkip := ReasonOf(err); isSkip {
			return Document{}, err
		}
		return Document{}, fmt.Errorf("read %s: %w", mt, err)
	}
	if len(bytes.TrimSpace([]byte(doc.Text))) == 0 {
		return Document{}, Skip(Empty, mt, nil, "no text after extraction")
	}
	return doc, nil
}
