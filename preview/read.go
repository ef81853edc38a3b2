package preview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/pdf"
)

// Document is one document read from a file, as a build reads it.
type Document struct {
	// File is the path the document was read from.
	File string
	// ID is the BEIR "_id" for a document of a corpus.jsonl file; empty otherwise.
	ID string
	// Line is the 1-based line of a corpus.jsonl document; 0 otherwise.
	Line int
	// Doc is the extracted text with its outline and pages.
	Doc reader.Document
}

// Name is File, followed by "#<ID>" for a corpus document.
func (d Document) Name() string {
	if d.ID == "" {
		return d.File
	}
	return d.File + "#" + d.ID
}

// Skipped is a document a build would skip, with the reason it gives.
type Skipped struct {
	// Name is the file, or file#line for a corpus line.
	Name string
	// Reason is the reader's skip reason (e.g. Encrypted, Corrupt, Empty).
	Reason reader.SkipReason
	// Err is the reader's error.
	Err error
}

// String is the line `ragops chunk` prints for s: "NAME: skipped (REASON): DETAIL", the
// reason said once (the reader's *reader.SkipError repeats it in its own message, which
// DETAIL leaves out: the media type, the detail and the underlying error).
func (s Skipped) String() string {
	detail := ""
	var se *reader.SkipError
	if errors.As(s.Err, &se) {
		var parts []string
		for _, p := range []string{se.MediaType, se.Detail} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		if se.Err != nil {
			parts = append(parts, se.Err.Error())
		}
		detail = strings.Join(parts, ": ")
		if outer := s.Err.Error(); outer != se.Error() {
			// Context wrapped around the skip (a corpus line's "line 3: ..."): keep it.
			detail = strings.Replace(outer, se.Error(), detail, 1)
		}
	} else if s.Err != nil {
		detail = s.Err.Error()
	}
	if detail == "" {
		return fmt.Sprintf("%s: skipped (%s)", s.Name, s.Reason)
	}
	return fmt.Sprintf("%s: skipped (%s): %s", s.Name, s.Reason, detail)
}

// Readers reads files through the format readers a build uses (package reader/formats);
// PDFium starts on the first file that needs a reader. Close it when done.
type Readers struct {
	// MaxBytes is the largest document read; 0 means reader.DefaultMaxBytes.
	MaxBytes int
	// Limit is the number of documents read from a BEIR corpus.jsonl file; 0 means all.
	Limit int
	// OCR configures text recognition of scans and images; Mode "" reads none (scanned
	// PDFs are skipped as NoTextLayer, images as Unsupported).
	OCR ocr.Options

	r *formats.Lazy
}

// Close stops PDFium if it was started.
func (rs *Readers) Close() error {
	if rs.r == nil {
		return nil
	}
	return rs.r.Close()
}

// ReadFile reads path: a BEIR corpus.jsonl gives up to Limit documents (its bad lines are
// returned as skipped, as a build skips them), any other file one document. A file a build
// would skip (encrypted, corrupt, empty, unsupported, too large) is returned as skipped;
// err is set only when the file cannot be opened or a reader fails outright.
func (rs *Readers) ReadFile(ctx context.Context, path string) ([]Document, []Skipped, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if reader.Sniff(data) == reader.MediaTypeBEIR {
		return rs.readCorpus(path, data)
	}
	if rs.r == nil {
		cache := ""
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "ragops", "pdfium")
		}
		rs.r = &formats.Lazy{Options: formats.Options{MaxBytes: rs.MaxBytes, PDF: pdf.Options{CacheDir: cache}, OCR: rs.OCR}}
	}
	if err := rs.r.Start(ctx); err != nil {
		return nil, nil, err
	}
	doc, err := rs.r.Read(ctx, data)
	if err != nil {
		if reason, ok := reader.ReasonOf(err); ok {
			return nil, []Skipped{{Name: path, Reason: reason, Err: err}}, nil
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return []Document{{File: path, Doc: doc}}, nil, nil
}

// errLimit stops a corpus scan at Limit documents.
var errLimit = fmt.Errorf("limit reached")

func (rs *Readers) readCorpus(path string, data []byte) ([]Document, []Skipped, error) {
	var docs []Document
	var skipped []Skipped
	err := beir.Scan(bytes.NewReader(data), func(e beir.Entry) error {
		if e.Err != nil {
			reason, _ := reader.ReasonOf(e.Err)
			skipped = append(skipped, Skipped{Name: fmt.Sprintf("%s:%d", path, e.Line), Reason: reason, Err: e.Err})
			return nil
		}
		if rs.Limit > 0 && len(docs) == rs.Limit {
			return errLimit
		}
		docs = append(docs, Document{File: path, ID: e.ID, Line: e.Line, Doc: e.Doc})
		return nil
	})
	if err != nil && err != errLimit {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return docs, skipped, nil
}
