package reader

import (
	"errors"
	"fmt"
)

// SkipReason says why a document was skipped. The values are stable strings, fit for
// metric labels and status counters.
type SkipReason string

// The reasons a document is skipped.
const (
	// Encrypted: password-protected or encrypted (PDF security handler, ODF encryption,
	// OOXML EncryptedPackage).
	Encrypted SkipReason = "Encrypted"
	// Corrupt: the container or syntax cannot be parsed.
	Corrupt SkipReason = "Corrupt"
	// Empty: no bytes, or a well-formed document with no text at all.
	Empty SkipReason = "Empty"
	// NoTextLayer: a PDF with pages but no extractable text (a scan without OCR layer).
	NoTextLayer SkipReason = "NoTextLayer"
	// TooLarge: more bytes than the configured limit.
	TooLarge SkipReason = "TooLarge"
	// Unsupported: a media type no reader handles (images without OCR, legacy .doc, EPUB,
	// ...).
	Unsupported SkipReason = "Unsupported"
	// OCRFailed: text recognition (Tesseract) failed, or ran past its time budget, on a
	// page that needed it.
	OCRFailed SkipReason = "OCRFailed"
)

// SkipReasons lists every SkipReason, for initialising counters.
var SkipReasons = []SkipReason{Encrypted, Corrupt, Empty, NoTextLayer, TooLarge, Unsupported, OCRFailed}

// SkipError reports a document that must be skipped, with the reason.
type SkipError struct {
	// Reason is why the document is skipped.
	Reason SkipReason
	// MediaType is the sniffed media type, when known.
	MediaType string
	// Detail says what exactly is wrong, for logs.
	Detail string
	// Err is the underlying library error, if any.
	Err error
}

// Error implements error.
func (e *SkipError) Error() string {
	s := "skip document (" + string(e.Reason) + ")"
	if e.MediaType != "" {
		s += " " + e.MediaType
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *SkipError) Unwrap() error { return e.Err }

// Skip returns a *SkipError with the given reason and media type and a formatted detail.
func Skip(reason SkipReason, mediaType string, err error, format string, args ...any) *SkipError {
	return &SkipError{Reason: reason, MediaType: mediaType, Detail: fmt.Sprintf(format, args...), Err: err}
}

// ReasonOf returns the skip reason carried by err (anywhere in its chain) and true, or
// "" and false when err is not a skip.
func ReasonOf(err error) (SkipReason, bool) {
	var se *SkipError
	if errors.As(err, &se) {
		return se.Reason, true
	}
	return "", false
}

// TooLargeSkip returns the TooLarge skip of a document of size bytes over limit bytes. Its
// detail names both, in bytes and MiB, and setting, what sets the limit (e.g.
// "spec.maxDocumentBytes"; empty: not named), so that a person can tell how far to raise it.
func TooLargeSkip(mediaType string, size, limit int64, setting string) *SkipError {
	const mib = 1 << 20
	detail := fmt.Sprintf("%d bytes (%.1f MiB), over the limit of %d bytes (%.1f MiB)", size, float64(size)/mib, limit, float64(limit)/mib)
	if setting != "" {
		detail += " set by " + setting
	}
	return &SkipError{Reason: TooLarge, MediaType: mediaType, Detail: detail}
}
