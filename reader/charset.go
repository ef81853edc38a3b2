package reader

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// DecodeText returns text documents' bytes as UTF-8: a UTF-8 byte order mark is dropped,
// UTF-16 with a byte order mark is transcoded, and bytes that are not valid UTF-8 are read
// as Windows-1252 (the usual legacy encoding of Dutch and other Western European text).
// CRLF and lone CR line ends become LF.
func DecodeText(data []byte) (string, error) {
	var s string
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		s = string(data[3:])
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		out, err := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder().Bytes(data)
		if err != nil {
			return "", err
		}
		s = string(out)
	case utf8.Valid(data):
		s = string(data)
	default:
		out, err := charmap.Windows1252.NewDecoder().Bytes(data)
		if err != nil {
			return "", err
		}
		s = string(out)
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s, nil
}
