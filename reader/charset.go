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
	s, _, err := DecodeTextEncoding(data)
	return s, err
}

// Encodings DecodeTextEncoding reports.
const (
	EncodingUTF16       = "UTF-16"
	EncodingWindows1252 = "windows-1252"
)

// DecodeTextEncoding decodes data as DecodeText does and also names the encoding it was
// decoded from when that was not UTF-8: EncodingUTF16 (a UTF-16 byte order mark) or
// EncodingWindows1252 (bytes that are not valid UTF-8); "" for UTF-8, with or without a
// byte order mark.
func DecodeTextEncoding(data []byte) (text, encoding string, err error) {
	var s string
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		s = string(data[3:])
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		out, err := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder().Bytes(data)
		if err != nil {
			return "", "", err
		}
		s, encoding = string(out), EncodingUTF16
	case utf8.Valid(data):
		s = string(data)
	default:
		out, err := charmap.Windows1252.NewDecoder().Bytes(data)
		if err != nil {
			return "", "", err
		}
		s, encoding = string(out), EncodingWindows1252
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s, encoding, nil
}
