package embedder

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/ort"
)

// benchOptions reads RAGOPS_BENCH_DEVICE (cpu|cuda), RAGOPS_BENCH_THREADS,
// RAGOPS_BENCH_BATCH_TOKENS (one budget; BenchmarkSciFact also takes a comma-separated list)
// and RAGOPS_BENCH_OVERLAP (on|off; empty: on with cuda) so the same test binary measures CPU
// and GPU runs (hack/bench-embedder/gpu.sh).
func benchOptions() Options {
	o := Options{Device: CPU, IntraOpThreads: 1}
	if d := os.Getenv("RAGOPS_BENCH_DEVICE"); d != "" {
		o.Device = Device(d)
	}
	if n, err := strconv.Atoi(os.Getenv("RAGOPS_BENCH_THREADS")); err == nil {
		o.IntraOpThreads = n
	}
	if n, err := strconv.Atoi(os.Getenv("RAGOPS_BENCH_BATCH_TOKENS")); err == nil {
		o.BatchTokens = n
	}
	o.Overlap = OverlapMode(os.Getenv("RAGOPS_BENCH_OVERLAP"))
	return o
}

// benchDocs chunks the first n SciFact documents into 128-token Recursive chunks.
func benchDocs(b *testing.B, m *Model, n int) ([]Document, int) {
	b.Helper()
	ch, err := chunkers.NewRecursive(m.Tokenizer(), 128, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	return sciFactDocs(b, ch, n, 0)
}

// sciFactDocs chunks the first n SciFact documents (title + "\n\n" + text) with ch, keeping
// at most maxChunks chunks in all (0: no limit), and returns them with their chunk count.
func sciFactDocs(tb testing.TB, ch chunkers.Chunker, n, maxChunks int) ([]Document, int) {
	tb.Helper()
	var docs []Document
	chunks := 0
	for _, d := range readCorpus(tb, "scifact", n) {
		text := d.Title + "\n\n" + d.Text
		cs, err := ch.Chunk(context.Background(), text)
		if err != nil {
			tb.Fatal(err)
		}
		if maxChunks > 0 {
			cs = cs[:min(len(cs), maxChunks-chunks)]
		}
		docs = append(docs, Document{Text: text, Chunks: cs})
		if chunks += len(cs); maxChunks > 0 && chunks == maxChunks {
			break
		}
	}
	return docs, chunks
}

// BenchmarkSciFact embeds SciFact documents (RAGOPS_BENCH_DOCS, default 200) in naive and
// late mode and reports tokens/s (real tokens, special tokens included, padding excluded),
// for each precision in RAGOPS_BENCH_PRECISIONS (comma-separated, default fp32; fp32,fp16
// measures the half-precision variant side by side with fp32 in one run). A list of token
// budgets in RAGOPS_BENCH_BATCH_TOKENS (512,8192) runs each mode once per budget, in the
// listed order, named <precision>/<mode>/<budget>.
func BenchmarkSciFact(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("RAGOPS_BENCH_DOCS")); err == nil {
		n = v
	}
	precisions := []string{string(FP32)}
	if v := os.Getenv("RAGOPS_BENCH_PRECISIONS"); v != "" {
		precisions = strings.Split(v, ",")
	}
	for _, p := range precisions {
		o := benchOptions()
		o.Precision = Precision(p)
		m := load(b, o)
		b.Logf("%s: provider %s, ONNX Runtime %s", p, m.Provider(), ort.Version())
		docs, chunks := benchDocs(b, m, n)
		budgets := []int{m.opts.BatchTokens}
		if v := os.Getenv("RAGOPS_BENCH_BATCH_TOKENS"); strings.Contains(v, ",") {
			budgets = budgets[:0]
			for _, f := range strings.Split(v, ",") {
				budget, err := strconv.Atoi(f)
				if err != nil {
					b.Fatalf("RAGOPS_BENCH_BATCH_TOKENS=%s: %v", v, err)
				}
				budgets = append(budgets, budget)
			}
		}
		for _, mode := range []Mode{Naive, Late} {
			for _, budget := range budgets {
				name := p + "/" + mode.String()
				if len(budgets) > 1 {
					name += "/" + strconv.Itoa(budget)
				}
				m.opts.BatchTokens = budget
				benchEmbed(b, name, m, docs, chunks, mode)
			}
		}
	}
}

// benchEmbed runs one sub-benchmark embedding docs in mode with m's options.
func benchEmbed(b *testing.B, name string, m *Model, docs []Document, chunks int, mode Mode) {
	b.Helper()
	b.Run(name, func(b *testing.B) {
		ctx := context.Background()
		if _, err := m.EmbedDocuments(ctx, docs[:min(8, len(docs))], mode); err != nil { // warm-up
			b.Fatal(err)
		}
		start := m.Stats().Tokens
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := m.EmbedDocuments(ctx, docs, mode); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		tokens := float64(m.Stats().Tokens - start)
		b.ReportMetric(tokens/b.Elapsed().Seconds(), "tokens/s")
		b.ReportMetric(float64(chunks*b.N)/b.Elapsed().Seconds(), "chunks/s")
	})
}
