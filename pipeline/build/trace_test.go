package build

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/tracing/jaegertest"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/ocr/ocrtest"
)

// Issue 53, traces: a two-shard build of 30 Markdown notes and a scanned PDF (real model,
// Weaviate, Tesseract) traced to a real Jaeger, each shard run as its pod runs it (the Job's
// TRACEPARENT and OTLP settings from tracing.JobEnv of the reconcile's span, read back by
// tracing.FromEnv). Jaeger's query API holds one trace: the reconcile's span (another
// service) as root, one build.shard span per shard under it with the shard's figures, under
// each its five steps, and under build.sync a read and a chunk span per document, an embed
// and a write span per batch and an ocr.page span per scanned page, whose documents, chunks
// and tokens add up to the shards' results.
func TestBuildTraceInJaeger(t *testing.T) {
	ocrtest.Require(t)
	jaeger := jaegertest.Start(t)
	f := newFixture(t, 30)
	data, err := os.ReadFile(filepath.Join("..", "..", "reader", "testdata", "ocr", "raadsbesluit-scan.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "scan.pdf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.plan.Shards = 2
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", tracing.EnvTraceParent, tracing.EnvTraceState} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.OTLPHTTP)
	ctx := context.Background()

	// The manager's side: its reconcile span, and the environment its Job builder gives the pods.
	mexp, err := otlptracehttp.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manager := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mexp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "ragops-manager"))))
	rctx, reconcile := manager.Tracer("test").Start(ctx, "Index reconcile")
	jobEnv := tracing.JobEnv(rctx)
	reconcile.End()
	if err := manager.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, kv := range jobEnv {
		t.Setenv(kv[0], kv[1])
	}
	if os.Getenv(tracing.EnvTraceParent) == "" {
		t.Fatalf("JobEnv gave no %s: %v", tracing.EnvTraceParent, jobEnv)
	}

	// The pods' side, as cmd's runWorker does it.
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	shutdown, err := tracing.Setup(ctx, "ragops-worker")
	if err != nil {
		t.Fatal(err)
	}
	results := make([]plan.BuildResult, f.plan.Shards)
	for shard := range results {
		res, err := Run(tracing.FromEnv(ctx), slog.New(slog.NewTextHandler(io.Discard, nil)), f.plan, Options{Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Skipped) > 0 || res.Resumed > 0 {
			t.Fatalf("shard %d: skipped %v, resumed %d; want every document read", shard, res.Skipped, res.Resumed)
		}
		results[shard] = res
	}
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// Expected spans: the reconcile, and per shard its span, 5 steps, a read and a chunk span
	// per document, an embed and a write span per batch of embedBatchDocuments, and OCR pages.
	want, ocrPages := 1, int64(0)
	for _, r := range results {
		batches := (int(r.Documents) + embedBatchDocuments - 1) / embedBatchDocuments
		want += 1 + 6 + 2*int(r.Documents) + 2*batches
		if r.OCR != nil {
			want += int(r.OCR.Pages)
			ocrPages += r.OCR.Pages
		}
	}
	if ocrPages == 0 {
		t.Fatal("no shard ran OCR on the scanned PDF")
	}
	traceID := reconcile.SpanContext().TraceID().String()
	var spans []jaegertest.Span
	deadline := time.Now().Add(2 * time.Minute)
	for len(spans) < want && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if spans, err = jaeger.Trace(ctx, traceID); err != nil {
			t.Fatal(err)
		}
	}
	if len(spans) != want {
		t.Fatalf("Jaeger holds %d spans of trace %s, want %d", len(spans), traceID, want)
	}

	byID := map[string]jaegertest.Span{}
	children := map[string][]jaegertest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
		children[s.Parent()] = append(children[s.Parent()], s)
	}
	roots := children[""]
	if len(roots) != 1 || roots[0].OperationName != "Index reconcile" || roots[0].Service != "ragops-manager" ||
		roots[0].SpanID != reconcile.SpanContext().SpanID().String() {
		t.Fatalf("roots %+v, want the manager's reconcile span alone", roots)
	}
	shards := children[roots[0].SpanID]
	if len(shards) != len(results) {
		t.Fatalf("%d spans under the reconcile, want one %s per shard", len(shards), SpanShard)
	}
	var total struct{ documents, chunks, tokens int64 }
	for _, sh := range shards {
		r := results[sh.Int("ragops.shard")]
		if sh.OperationName != SpanShard || sh.Service != "ragops-worker" || sh.Int("ragops.shards") != 2 {
			t.Errorf("span %s (%s, shards %v) under the reconcile, want %s of ragops-worker", sh.OperationName, sh.Service, sh.Tag("ragops.shards"), SpanShard)
		}
		if sh.Int("ragops.documents") != r.Documents || sh.Int("ragops.chunks") != r.Chunks || sh.Int("ragops.tokens") != r.Tokens {
			t.Errorf("shard %d span: documents %d, chunks %d, tokens %d; result %d, %d, %d", r.Shard,
				sh.Int("ragops.documents"), sh.Int("ragops.chunks"), sh.Int("ragops.tokens"), r.Documents, r.Chunks, r.Tokens)
		}
		steps := map[string]jaegertest.Span{}
		for _, s := range children[sh.SpanID] {
			steps[s.OperationName] = s
			if s.StartTime < sh.StartTime || s.StartTime+s.Duration > sh.StartTime+sh.Duration {
				t.Errorf("shard %d: step %s outside its shard's span", r.Shard, s.OperationName)
			}
		}
		for _, name := range []string{"build.open", "build.plan", "build.sync", "build.regroup", "build.removeStale", "build.collectCache"} {
			if _, ok := steps[name]; !ok {
				t.Errorf("shard %d: no %s span; steps %v", r.Shard, name, len(steps))
			}
		}
		if len(steps) != 6 || len(children[sh.SpanID]) != 6 {
			t.Errorf("shard %d: %d spans under it, want the 6 steps", r.Shard, len(children[sh.SpanID]))
		}
		count := map[string]int64{}
		sum := map[string]int64{}
		sync := steps["build.sync"]
		for _, s := range children[sync.SpanID] {
			count[s.OperationName]++
			if s.StartTime < sync.StartTime || s.StartTime+s.Duration > sync.StartTime+sync.Duration {
				t.Errorf("shard %d: %s span outside build.sync", r.Shard, s.OperationName)
			}
			switch s.OperationName {
			case SpanRead:
				if s.Tag("ragops.document") == nil || s.Int("ragops.bytes") <= 0 {
					t.Errorf("shard %d: read span without document or bytes: %+v", r.Shard, s.Tags)
				}
			case SpanChunk:
				sum["chunk.chunks"] += s.Int("ragops.chunks")
			case SpanEmbed:
				sum["embed.documents"] += s.Int("ragops.documents")
				sum["embed.chunks"] += s.Int("ragops.chunks")
				sum["embed.tokens"] += s.Int("ragops.tokens")
			case SpanWrite:
				sum["write.chunks"] += s.Int("ragops.chunks")
			case ocr.SpanPage:
				if s.Int("ragops.words") <= 0 {
					t.Errorf("shard %d: OCR page span without words: %+v", r.Shard, s.Tags)
				}
			}
		}
		var pages int64
		if r.OCR != nil {
			pages = r.OCR.Pages
		}
		if count[SpanRead] != r.Documents || count[SpanChunk] != r.Documents || count[ocr.SpanPage] != pages {
			t.Errorf("shard %d: %d read, %d chunk, %d ocr.page spans; want %d, %d, %d", r.Shard,
				count[SpanRead], count[SpanChunk], count[ocr.SpanPage], r.Documents, r.Documents, pages)
		}
		if sum["chunk.chunks"] != r.Chunks || sum["embed.chunks"] != r.Chunks || sum["write.chunks"] != r.Chunks ||
			sum["embed.documents"] != r.Documents || sum["embed.tokens"] != r.Tokens {
			t.Errorf("shard %d: spans count %v; result documents %d, chunks %d, tokens %d", r.Shard, sum, r.Documents, r.Chunks, r.Tokens)
		}
		total.documents += r.Documents
		total.chunks += r.Chunks
		total.tokens += r.Tokens
	}
	if total.documents != 31 {
		t.Errorf("shards embedded %d documents, want the 31 of the corpus", total.documents)
	}
	t.Logf("trace %s: %d spans, %d documents, %d chunks, %d tokens, %d OCR pages", traceID, len(spans), total.documents, total.chunks, total.tokens, ocrPages)
	if os.Getenv("RAGOPS_TRACE_TREE") != "" {
		logTree(t, children, roots[0], 0)
	}
}

// logTree logs the span tree under s, one line a span; three or more children of one name
// are one line with their count, total time and summed figures.
func logTree(t *testing.T, children map[string][]jaegertest.Span, s jaegertest.Span, depth int) {
	t.Logf("%*s%s [%s] %.1f ms %s", 2*depth, "", s.OperationName, s.Service, float64(s.Duration)/1000, tagLine(s))
	kids := children[s.SpanID]
	sort.Slice(kids, func(i, j int) bool { return kids[i].StartTime < kids[j].StartTime })
	byName := map[string][]jaegertest.Span{}
	var order []string
	for _, k := range kids {
		if byName[k.OperationName] == nil {
			order = append(order, k.OperationName)
		}
		byName[k.OperationName] = append(byName[k.OperationName], k)
	}
	for _, name := range order {
		group := byName[name]
		if len(group) < 3 {
			for _, k := range group {
				logTree(t, children, k, depth+1)
			}
			continue
		}
		var ms float64
		sums := map[string]int64{}
		for _, k := range group {
			ms += float64(k.Duration) / 1000
			for _, key := range []string{"documents", "chunks", "tokens", "bytes", "words"} {
				sums[key] += k.Int("ragops." + key)
			}
		}
		line := ""
		for _, key := range []string{"documents", "chunks", "tokens", "bytes", "words"} {
			if sums[key] > 0 {
				line += fmt.Sprintf(" %s=%d", key, sums[key])
			}
		}
		t.Logf("%*s%s x%d [%s] %.1f ms in all,%s", 2*(depth+1), "", name, len(group), group[0].Service, ms, line)
	}
}

func tagLine(s jaegertest.Span) string {
	var out string
	for _, tg := range s.Tags {
		if len(tg.Key) > 7 && tg.Key[:7] == "ragops." {
			out += tg.Key[7:] + "=" + fmtAny(tg.Value) + " "
		}
	}
	return out
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'f', 3, 64)
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}
