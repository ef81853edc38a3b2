package markup

import (
	"context"

	"github.com/ragops/ragops/reader"
)

// Text reads plain text. The document text is the input decoded by reader.DecodeText,
// otherwise unchanged, so offsets into it are offsets into the (UTF-8) file.
type Text struct{}

// MediaTypes implements reader.FormatReader.
func (Text) MediaTypes() []string { return []string{reader.MediaTypeText} }

// Read implements reader.FormatReader.
func (Text) Read(_ context.Context, data []byte, mediaType string) (reader.Document, error) {
	s, enc, err := reader.DecodeTextEncoding(data)
	if err != nil {
		return reader.Document{}, reader.Skip(reader.Corrupt, mediaType, err, "cannot decode text")
	}
	return reader.Document{MediaType: mediaType, Text: s, Encoding: enc}, nil
}
