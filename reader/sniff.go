package reader

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Media types Sniff returns.
const (
	MediaTypeText     = "text/plain"
	MediaTypeMarkdown = "text/markdown"
	MediaTypeHTML     = "text/html"
	MediaTypePDF      = "application/pdf"
	MediaTypeDOCX     = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	MediaTypeODT      = "application/vnd.oasis.opendocument.text"
	// MediaTypeBEIR is a BEIR corpus.jsonl: one JSON object per line with "_id" and "text"
	// (and optionally "title"). It holds many documents; read it with reader/beir.
	MediaTypeBEIR = "application/x-beir-corpus+jsonl"
	// MediaTypeOOXMLEncrypted is an encrypted Office Open XML file: a Compound File
	// (OLE2) container holding an "EncryptedPackage" stream.
	MediaTypeOOXMLEncrypted = "application/x-ooxml-encrypted"
	// MediaTypeZip is a ZIP archive that is none of the document containers above.
	MediaTypeZip = "application/zip"
	// Image media types: scanned pages read by OCR (reader/imagedoc).
	MediaTypePNG  = "image/png"
	MediaTypeJPEG = "image/jpeg"
	MediaTypeTIFF = "image/tiff"
)

// sniffMarkdownBytes is how much of a text document Sniff searches for Markdown syntax.
const sniffMarkdownBytes = 64 << 10

var (
	cfbMagic         = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
	encryptedPackage = []byte("E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e\x00")
)

// Sniff returns the media type of data judged from its content alone: "%PDF-" magic for
// PDF; ZIP containers inspected for DOCX (word/document.xml) and ODF (the "mimetype"
// entry); Compound File containers with an EncryptedPackage stream as encrypted OOXML;
// net/http.DetectContentType for HTML and other types; and, for text, BEIR corpus lines
// and Markdown syntax (headings, fences, tables, links) to tell them from plain text.
// Parameters such as "; charset=utf-8" are dropped.
func Sniff(data []byte) string {
	head := data
	if len(head) > 1024 {
		head = head[:1024]
	}
	if bytes.Contains(head, []byte("%PDF-")) {
		return MediaTypePDF
	}
	if bytes.HasPrefix(data, cfbMagic) {
		if bytes.Contains(data, encryptedPackage) {
			return MediaTypeOOXMLEncrypted
		}
		return "application/x-ole-storage"
	}
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) || bytes.HasPrefix(data, []byte("PK\x05\x06")) {
		return sniffZip(data)
	}
	if bytes.HasPrefix(data, []byte("II*\x00")) || bytes.HasPrefix(data, []byte("MM\x00*")) {
		return MediaTypeTIFF // TIFF 6.0 section 2 byte order and magic 42; net/http does not sniff it
	}
	mt := http.DetectContentType(data)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	if mt != MediaTypeText {
		return mt
	}
	// A UTF-8 byte order mark (DecodeText drops it) does not hide the first line's syntax.
	data = bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})
	if isBEIR(data) {
		return MediaTypeBEIR
	}
	if looksLikeMarkdown(prefixOf(data, sniffMarkdownBytes)) {
		return MediaTypeMarkdown
	}
	return MediaTypeText
}

func sniffZip(data []byte) string {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		// A local file header but no readable central directory: judge by the first
		// entry's name, so a truncated DOCX is reported as a corrupt DOCX.
		switch {
		case bytes.Contains(prefixOf(data, 256), []byte("mimetype")) && bytes.Contains(prefixOf(data, 256), []byte(MediaTypeODT)):
			return MediaTypeODT
		case bytes.Contains(data, []byte("word/")):
			return MediaTypeDOCX
		}
		return MediaTypeZip
	}
	for _, f := range zr.File {
		switch f.Name {
		case "word/document.xml":
			return MediaTypeDOCX
		case "mimetype":
			rc, err := f.Open()
			if err != nil {
				return MediaTypeZip
			}
			b, _ := io.ReadAll(io.LimitReader(rc, 200))
			rc.Close()
			return strings.TrimSpace(string(b))
		}
	}
	return MediaTypeZip
}

func prefixOf(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// isBEIR reports whether the first non-empty line is a JSON object with "_id" and "text".
func isBEIR(data []byte) bool {
	line := bytes.TrimSpace(data)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	var rec map[string]json.RawMessage
	if json.Unmarshal(line, &rec) != nil {
		return false
	}
	_, id := rec["_id"]
	_, text := rec["text"]
	return id && text
}

// looksLikeMarkdown reports Markdown syntax: an ATX heading ("# Title"), a setext
// underline (=== or --- under a text line), a code fence, a GFM table delimiter row, a
// footnote definition, or an inline link "[text](url)".
func looksLikeMarkdown(data []byte) bool {
	if i := bytes.Index(data, []byte("](")); i > 0 && bytes.IndexByte(data[:i], '[') >= 0 {
		return true
	}
	prevText := false
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		t := bytes.TrimRight(line, " \t\r")
		switch {
		case len(t) == 0:
			prevText = false
			continue
		case t[0] == '#':
			n := 0
			for n < len(t) && t[n] == '#' {
				n++
			}
			if n <= 6 && n < len(t) && (t[n] == ' ' || t[n] == '\t') {
				return true
			}
		case bytes.HasPrefix(t, []byte("```")), bytes.HasPrefix(t, []byte("~~~")), bytes.HasPrefix(t, []byte("[^")) && bytes.Contains(t, []byte("]:")):
			return true
		case prevText && (allOf(t, '=') || len(t) >= 3 && allOf(t, '-')):
			return true
		case bytes.Contains(t, []byte("|")) && bytes.Contains(t, []byte("---")) && allIn(t, "|-: \t"):
			return true
		}
		prevText = true
	}
	return false
}

func allOf(b []byte, c byte) bool {
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return true
}

func allIn(b []byte, set string) bool {
	for _, x := range b {
		if strings.IndexByte(set, x) < 0 {
			return false
		}
	}
	return true
}
