package embedder

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragops/ragops/chunkers"
)

// BenchmarkLargeDocuments embeds 80,000-word Dutch documents (legalqa-nl laws joined;
// RAGOPS_BENCH_WORDS overrides the size) in 500-token Recursive chunks, alone and four in
// one call (one flush), and reports the peak RSS (VmHWM, reset through
// /proc/self/clear_refs before each case), the peak Go heap (sampled every millisecond) and
// seconds. Cases: naive, late, and late-whole (the whole-document pooling of 7eb6a4b,
// embedLateWhole) for one document; naive and late for four. RAGOPS_BENCH_LARGE_CASES
// picks cases by name (comma-separated, e.g. naive/4,late/4,late-whole/4). Run it alone,
// once per case:
//
//	go test -run '^$' -bench BenchmarkLargeDocuments -benchtime 1x -timeout 60m ./embedder/
func BenchmarkLargeDocuments(b *testing.B) {
	words := 80000
	if v, err := strconv.Atoi(os.Getenv("RAGOPS_BENCH_WORDS")); err == nil {
		words = v
	}
	cases := []string{"naive/1", "late/1", "late-whole/1", "naive/4", "late/4"}
	if v := os.Getenv("RAGOPS_BENCH_LARGE_CASES"); v != "" {
		cases = strings.Split(v, ",")
	}
	m := load(b, benchOptions())
	ch, err := chunkers.NewRecursive(m.Tokenizer(), 500, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var docs []Document
	for _, skip := range []int{0, 60, 120, 180} {
		text := legalText(b, skip, words)
		cs, err := ch.Chunk(ctx, text)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, Document{Text: text, Chunks: cs})
	}
	b.Logf("%d words a document: %d windows, %d chunks (first document)", words,
		len(prepareLate(m.tok, m.docPre, m.opts, docs[0].Text).wins), len(docs[0].Chunks))
	for _, name := range cases {
		mode, n, _ := strings.Cut(name, "/")
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > len(docs) {
			b.Fatalf("case %q: want <mode>/<1..4>", name)
		}
		run := func() error { _, err := m.EmbedDocuments(ctx, docs[:k], Naive); return err }
		switch mode {
		case "late":
			run = func() error { _, err := m.EmbedDocuments(ctx, docs[:k], Late); return err }
		case "late-whole":
			run = func() error { _, err := m.embedLateWhole(ctx, docs[:k]); return err }
		case "naive":
		default:
			b.Fatalf("case %q: mode %q, want naive, late or late-whole", name, mode)
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rss, heap, err := peakMemory(run)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			}
		})
	}
}

// peakMemory runs fn and returns the process's peak RSS and the peak Go heap objects
// (live and unswept) while it ran, in bytes.
func peakMemory(fn func() error) (rss, heap uint64, err error) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, 0, fmt.Errorf("reset peak RSS: %w", err)
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			metrics.Read(sample)
			heap = max(heap, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	err = fn()
	close(done)
	wg.Wait()
	f, ferr := os.Open("/proc/self/status")
	if ferr != nil {
		return 0, heap, ferr
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	return rss, heap, err
}
