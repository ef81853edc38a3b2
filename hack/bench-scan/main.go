// Command bench-scan reads one scanned PDF the way a build shard does (corpus.Open on a
// folder holding it, Source.Walk, the format readers with spec.ocr defaults: Auto, nld+eng,
// 300 DPI, minConfidence 70; maxDocumentBytes 512 MiB) and prints the pages read by OCR, the
// text length, wall and CPU seconds (this process and Tesseract) and the peak RSS of this
// process (VmHWM) and of the largest Tesseract run. The OCR time budgets are raised (a page
// 10 minutes, the document 6 hours) so that a loaded machine measures instead of timing out.
// The same source builds against any commit with these APIs, so a run of the binary built at
// the old commit and one built at the new compare reading paths (hack/bench-scan/run.sh).
//
//	bench-scan [-ocr Never] -pdf FILE.pdf
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/pdf"
)

func main() {
	file := flag.String("pdf", "", "the scanned PDF")
	mode := flag.String("ocr", "Auto", "OCR mode: Auto (spec.ocr's default) or Never (the pages are loaded, not recognised: the reading path alone)")
	flag.Parse()
	if err := run(*file, ocr.Mode(*mode)); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scan:", err)
		os.Exit(1)
	}
}

func run(file string, mode ocr.Mode) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-scan-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	if err := os.Symlink(abs, filepath.Join(dir, filepath.Base(file))); err != nil {
		return err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return err
	}
	readers := &formats.Lazy{Options: formats.Options{MaxBytes: 512 << 20,
		PDF: pdf.Options{CacheDir: filepath.Join(os.TempDir(), "pdfium-cache")},
		OCR: ocr.Options{Mode: mode, PageTimeout: 10 * time.Minute, DocumentTimeout: 6 * time.Hour}}}
	defer readers.Close()
	src, err := corpus.Open(ctx, plan.Source{Dir: dir, MaxDocumentBytes: 512 << 20}, os.TempDir(), readers)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var doc corpus.Document
	var skipped []string
	err = src.Walk(ctx, false, nil, func(d corpus.Document) error { doc = d; return nil },
		func(s corpus.Skipped) { skipped = append(skipped, fmt.Sprintf("%s: %s: %v", s.ID, s.Reason, s.Err)) })
	wall := time.Since(t0).Seconds()
	if err != nil {
		return err
	}
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	cpu := func(r syscall.Rusage) float64 {
		return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
	}
	pages := 0
	if doc.Doc.OCR != nil {
		pages = doc.Doc.OCR.Pages
	}
	fmt.Printf("file %s: %.1f MiB, read %v, skipped %q; %d pages in the text, %d by OCR, %d bytes of text; %.0f s wall, %.0f CPU-s (this process %.0f, Tesseract %.0f); peak RSS %s, largest Tesseract run %d MiB\n",
		filepath.Base(file), float64(st.Size())/(1<<20), doc.Read, skipped, len(doc.Doc.Pages), pages, len(doc.Doc.Text),
		wall, cpu(self)+cpu(kids), cpu(self), cpu(kids), vmHWM(), kids.Maxrss/1024)
	return nil
}

func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}
