package embedder

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ragops/ragops/chunkers"
)

// Record is one line of the JSONL output: a chunk, its text and its vector.
type Record struct {
	DocID       string          `json:"docId"`
	Ordinal     int             `json:"ordinal"`
	Start       int             `json:"start"`
	End         int             `json:"end"`
	Spans       []chunkers.Span `json:"spans,omitempty"`
	TokenCount  int             `json:"tokenCount"`
	HeadingPath []string        `json:"headingPath,omitempty"`
	Text        string          `json:"text"`
	Mode        string          `json:"mode"`
	Vector      []float32       `json:"vector"`
}

// JSONLWriter writes chunks and their vectors as JSON Lines, one Record per line. It is the
// embedder's output until a vector store takes it; it is not safe for concurrent use.
type JSONLWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewJSONLWriter writes to w; call Flush at the end.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	bw := bufio.NewWriter(w)
	return &JSONLWriter{w: bw, enc: json.NewEncoder(bw)}
}

// Write appends one record per chunk of a document. chunks and vecs must have the same
// length; text is the document text the chunks' byte offsets point into.
func (j *JSONLWriter) Write(docID, text string, chunks []chunkers.Chunk, vecs [][]float32, mode Mode) error {
	if len(chunks) != len(vecs) {
		return fmt.Errorf("embedder: document %q has %d chunks but %d vectors", docID, len(chunks), len(vecs))
	}
	for i, c := range chunks {
		if err := checkChunk(text, c); err != nil {
			return fmt.Errorf("embedder: document %q: %w", docID, err)
		}
		r := Record{DocID: docID, Ordinal: c.Ordinal, Start: c.Start, End: c.End, Spans: c.Spans,
			TokenCount: c.TokenCount, HeadingPath: c.HeadingPath, Text: chunkText(text, c),
			Mode: mode.String(), Vector: vecs[i]}
		if err := j.enc.Encode(&r); err != nil {
			return fmt.Errorf("embedder: writing document %q chunk %d: %w", docID, c.Ordinal, err)
		}
	}
	return nil
}

// Flush writes buffered records to the underlying writer.
func (j *JSONLWriter) Flush() error { return j.w.Flush() }
