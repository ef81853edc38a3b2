package reader

import (
	"encoding/json"
	"fmt"
)

// Version is the version of what the format readers extract. Bump it whenever a reader's
// output for the same bytes and options changes (a fix in a reader, a new layout rule, a
// new OCR cleanup, new metadata), so that cached extractions made by older readers are
// not reused. 2: readers set Document.Metadata, and Markdown front matter is no longer text.
const Version = "2"

// EncodingFormat names the serialized form of a Document written by [Encode].
const EncodingFormat = "ragops.dev/document/v1"

// encoded is a serialized Document: its format and the document.
type encoded struct {
	Format   string   `json:"format"`
	Document Document `json:"document"`
}

// Encode serializes d as JSON with its format ([EncodingFormat]); [Decode] reads it back.
func Encode(d Document) ([]byte, error) {
	return json.Marshal(encoded{Format: EncodingFormat, Document: d})
}

// Decode reads a Document that [Encode] wrote.
//
// Errors: not JSON, or another format than [EncodingFormat] (written by another version).
func Decode(b []byte) (Document, error) {
	var e encoded
	if err := json.Unmarshal(b, &e); err != nil {
		return Document{}, fmt.Errorf("decode document: %w", err)
	}
	if e.Format != EncodingFormat {
		return Document{}, fmt.Errorf("decode document: format %q, this build reads %q", e.Format, EncodingFormat)
	}
	return e.Document, nil
}
