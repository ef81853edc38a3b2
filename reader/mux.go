package reader

import (
	"bytes"
	"context"
	"fmt"
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
