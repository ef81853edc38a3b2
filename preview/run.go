package preview

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ragops/ragops/reader/ocr"
)

// Output formats.
const (
	OutputTable = "table"
	OutputJSON  = "json"
)

// Config is one `ragops chunk` invocation.
type Config struct {
	// Strategy is the ChunkingStrategy YAML file; Compare an optional second one.
	Strategy string
	Compare  string
	// Files are the documents to chunk.
	Files []string
	// ModelDir is the model folder ("" for none); LibraryPath the ONNX Runtime library
	// for Semantic and Cluster strategies ("" means $RAGOPS_ONNXRUNTIME_LIB).
	ModelDir    string
	LibraryPath string
	// Output is OutputTable (default) or OutputJSON.
	Output string
	// Limit is how many documents of a BEIR corpus.jsonl are chunked; 0 means all.
	Limit int
	// MaxDocumentBytes is the largest document read; 0 means the readers' default.
	MaxDocumentBytes int
	// OCR configures text recognition of scanned PDF pages and image documents as a
	// Corpus's spec.ocr does; Mode "" means ocr.Auto (the Corpus default).
	OCR ocr.Options
}

// Run chunks every document of c.Files with the strategy (and the compared one) and writes
// the results to out: a table per document, JSON lines, or a side-by-side comparison.
// Documents a build would skip are named on errOut with the reader's reason. It fails
// before reading any file when a strategy is invalid (with the apiserver's or the
// controller's message), and after writing everything else when a file could not be read
// or a document was skipped.
func Run(ctx context.Context, out, errOut io.Writer, c Config) error {
	if c.Output == "" {
		c.Output = OutputTable
	}
	if c.Output != OutputTable && c.Output != OutputJSON {
		return fmt.Errorf("output %q must be %s or %s", c.Output, OutputTable, OutputJSON)
	}
	if len(c.Files) == 0 {
		return errors.New("no files to chunk")
	}
	var model *Model
	if c.ModelDir != "" {
		m, err := LoadModel(c.ModelDir, c.LibraryPath)
		if err != nil {
			return err
		}
		defer m.Close()
		model = m
	}
	var chunkers []*Chunker
	for _, path := range []string{c.Strategy, c.Compare} {
		if path == "" {
			continue
		}
		s, err := LoadStrategy(ctx, path)
		if err != nil {
			return err
		}
		ch, err := NewChunker(s, model)
		if err != nil {
			return err
		}
		if s.late() && model == nil {
			fmt.Fprintf(errOut, "strategy %s: late chunking windows are shown with --model only\n", s.Name)
		}
		chunkers = append(chunkers, ch)
	}
	if len(chunkers) == 0 {
		return errors.New("no strategy file (-f)")
	}

	if c.OCR.Mode == "" {
		c.OCR.Mode = ocr.Auto
	}
	readers := &Readers{MaxBytes: c.MaxDocumentBytes, Limit: c.Limit, OCR: c.OCR}
	defer readers.Close()
	var failed []error
	skipped, written := 0, 0
	for _, path := range c.Files {
		docs, skips, err := readers.ReadFile(ctx, path)
		if err != nil {
			failed = append(failed, err)
			fmt.Fprintf(errOut, "%v\n", err)
			continue
		}
		for _, s := range skips {
			skipped++
			fmt.Fprintln(errOut, s)
		}
		for _, d := range docs {
			results := make([]Result, len(chunkers))
			for i, ch := range chunkers {
				if results[i], err = ch.Chunk(ctx, d); err != nil {
					return err
				}
			}
			if err := write(out, c.Output, results, written); err != nil {
				return err
			}
			written++
		}
	}
	if skipped > 0 {
		failed = append(failed, fmt.Errorf("documents skipped: %d", skipped))
	}
	return errors.Join(failed...)
}

// write writes one document's results; n is the number of documents written before.
func write(out io.Writer, format string, results []Result, n int) error {
	if format == OutputJSON {
		for _, r := range results {
			if err := WriteJSON(out, r); err != nil {
				return err
			}
		}
		return nil
	}
	if n > 0 {
		fmt.Fprintln(out)
	}
	if len(results) == 2 {
		_, err := WriteCompare(out, results[0], results[1])
		return err
	}
	return WriteTable(out, results[0])
}
