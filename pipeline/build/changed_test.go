package build

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
	"github.com/ragops/ragops/reader/ocr/ocrtest"
	"github.com/ragops/ragops/vectorstore"
)

// countingReader counts the documents handed to the next reader, and the PDFs among them.
type countingReader struct {
	next      corpus.DocumentReader
	calls     atomic.Int64
	pdfOpened atomic.Int64
}

func (c *countingReader) Read(ctx context.Context, data []byte) (reader.Document, error) {
	c.calls.Add(1)
	if reader.Sniff(data) == reader.MediaTypePDF {
		c.pdfOpened.Add(1)
	}
	return c.next.Read(ctx, data)
}

// take returns the calls since the last take.
func (c *countingReader) take() (calls, pdfs int64) {
	return c.calls.Swap(0), c.pdfOpened.Swap(0)
}

func reads(res plan.BuildResult) ragopsv1alpha1.DocumentReads {
	if res.Reads == nil {
		return ragopsv1alpha1.DocumentReads{}
	}
	r := *res.Reads
	r.PlanMilliseconds, r.BytesFetched = 0, 0 // timed; bytes: TestBytesFetchedCountsWhatWasRead
	return r
}

// Issue 51, hash before read: a sync that adds 10 documents to 1,000 runs the reader for
// those 10 only, without any cache (the 1,000 are decided unchanged from their raw hash, never
// extracted), and a resumed build of the complete shard runs it for none (every document
// comes from the extraction cache). A sync that removes a document collects its cache entry.
func TestSyncReadsOnlyWhatChanged(t *testing.T) {
	f := newFixture(t, 0)
	write := func(i int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("b%04d.md", i)), fmt.Appendf(nil, "# B %d\n\nBesluit %d.", i, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		write(i)
	}
	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingReader{next: reader.NewMux(0, markup.Text{}, markup.Markdown{})}
	run := func(incremental bool, cache string) plan.BuildResult {
		t.Helper()
		p := f.plan
		p.Incremental, p.ExtractionCache = incremental, cache
		res, err := Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{Readers: counter})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(false, cache)
	if calls, _ := counter.take(); calls != 1000 || res.Documents != 1000 {
		t.Fatalf("build: %d reader calls, %d documents; want 1000 of each", calls, res.Documents)
	}
	if got, want := reads(res), (ragopsv1alpha1.DocumentReads{Extracted: 1000, CacheMisses: 1000}); got != want {
		t.Errorf("build reads %+v, want %+v", got, want)
	}

	res = run(false, cache)
	if calls, _ := counter.take(); calls != 0 {
		t.Errorf("resumed build of a complete shard: %d reader calls, want 0", calls)
	}
	if res.Resumed != 1000 {
		t.Errorf("resumed %d documents, want 1000", res.Resumed)
	}
	if got, want := reads(res), (ragopsv1alpha1.DocumentReads{CacheHits: 1000}); got != want {
		t.Errorf("resume reads %+v, want %+v", got, want)
	}

	for i := 1000; i < 1010; i++ {
		write(i)
	}
	res = run(true, "")
	if calls, _ := counter.take(); calls != 10 {
		t.Errorf("sync adding 10 of 1,010 (no cache): %d reader calls, want 10", calls)
	}
	if res.Documents != 10 || res.Unchanged != 1000 {
		t.Errorf("sync: %d documents written, %d unchanged; want 10 and 1000", res.Documents, res.Unchanged)
	}
	if got, want := reads(res), (ragopsv1alpha1.DocumentReads{Extracted: 10, Unchanged: 1000}); got != want {
		t.Errorf("sync reads %+v, want %+v", got, want)
	}

	// A document removed from the corpus leaves the cache with the sync that deletes it.
	if err := os.Remove(filepath.Join(f.dir, "b0007.md")); err != nil {
		t.Fatal(err)
	}
	res = run(true, cache)
	if calls, _ := counter.take(); calls != 0 || res.Deleted != 1 || res.CacheCollected != 1 {
		t.Errorf("sync removing one: %d reader calls, %d deleted, %d cache entries collected; want 0, 1, 1", calls, res.Deleted, res.CacheCollected)
	}
}

// Issue 51, extraction cache: a second revision with another strategy on an unchanged corpus
// of a born-digital PDF, a scanned PDF and a Markdown note (real PDFium and Tesseract) opens
// no PDF and runs OCR on no page; the first revision did both, and both revisions chunk the
// same text.
func TestSecondRevisionOpensNoPDFAndRunsNoOCR(t *testing.T) {
	ocrtest.Require(t)
	f := newFixture(t, 0)
	for dst, src := range map[string]string{"besluit.pdf": "raadsbesluit.pdf", "scan.pdf": "ocr/raadsbesluit-scan.pdf", "besluit.md": "raadsbesluit.md"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "reader", "testdata", filepath.FromSlash(src)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, dst), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	f.plan.ExtractionCache = name
	readers := NewReaders(f.plan.Source)
	defer readers.Close()
	counter := &countingReader{next: readers}
	run := func(p plan.Build) plan.BuildResult {
		t.Helper()
		res, err := Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{Readers: counter})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Skipped) > 0 || res.Documents != 3 {
			t.Fatalf("revision %s: %d documents, skipped %v; want 3 read", p.Revision, res.Documents, res.Skipped)
		}
		return res
	}
	first := run(f.plan)
	if calls, pdfs := counter.take(); calls != 3 || pdfs != 2 || first.OCR == nil || first.OCR.Pages < 2 {
		t.Fatalf("first revision: %d reader calls, %d PDFs opened, OCR %+v; want 3, 2 and the scan's pages", calls, pdfs, first.OCR)
	}
	if got, want := reads(first), (ragopsv1alpha1.DocumentReads{Extracted: 3, CacheMisses: 3}); got != want {
		t.Errorf("first revision reads %+v, want %+v", got, want)
	}

	second := f.plan
	second.Revision = "r2"
	if second.Collection, err = vectorstore.CollectionName("t", "besluiten", "r2"); err != nil {
		t.Fatal(err)
	}
	second.Strategy.Size = 48
	res := run(second)
	if calls, pdfs := counter.take(); calls != 0 || pdfs != 0 || res.OCR != nil {
		t.Errorf("second revision: %d reader calls, %d PDFs opened, OCR %+v; want none", calls, pdfs, res.OCR)
	}
	if got, want := reads(res), (ragopsv1alpha1.DocumentReads{CacheHits: 3}); got != want {
		t.Errorf("second revision reads %+v, want %+v", got, want)
	}
	if res.Chunks == 0 || res.Chunks >= first.Chunks {
		t.Errorf("second revision: %d chunks of 48 tokens, first %d of 24: want fewer, from the same text", res.Chunks, first.Chunks)
	}
}
