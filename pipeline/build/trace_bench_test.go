package build

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/tracing/jaegertest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// BenchmarkTracingOverhead measures a shard's tokens per CPU-second of this process (the
// worker: reading, chunking, ONNX Runtime, the exporter) with tracing off (no endpoint: the
// no-op provider) and on (exporting every span to a real Jaeger), in interleaved pairs of
// full builds of 300 Markdown documents, and reports both medians and the median of the
// pairs' on/off ratios (issue 53: goal within 2%). Run with -bench TracingOverhead
// -benchtime 1x; RAGOPS_BENCH_PAIRS sets the pairs (default 7).
func BenchmarkTracingOverhead(b *testing.B) {
	testenv.Need(b, ort.EnvLibrary, "run hack/prepare.d/embedder.sh")
	model := testenv.Need(b, "RAGOPS_MODEL_DIR", "run hack/prepare.d/embedder.sh")
	jaeger := jaegertest.Start(b)
	wv := weaviatetest.Start(b)
	dir := b.TempDir()
	words := strings.Fields("de raad besluit over het voorstel van het college om de begroting voor het jaar aan te passen en de motie over woningbouw in de wijk aan te nemen na een lang debat met de fracties")
	for i := range 300 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Besluit %d\n\n", i)
		for j := range 40 + i%40 {
			sb.WriteString(words[(i*7+j)%len(words)] + " ")
			if j%15 == 14 {
				sb.WriteString("\n\n")
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("besluit-%03d.md", i)), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"} {
		b.Setenv(k, "")
	}
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.OTLPHTTP)
	shutdown, err := tracing.Setup(context.Background(), "ragops-worker")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()); otel.SetTracerProvider(noop.NewTracerProvider()) }()
	on := otel.GetTracerProvider()
	off := noop.NewTracerProvider()

	pairs := 7
	if v := os.Getenv("RAGOPS_BENCH_PAIRS"); v != "" {
		_, _ = fmt.Sscan(v, &pairs)
	}
	run := func(rev string, traced bool) float64 {
		b.Helper()
		if traced {
			otel.SetTracerProvider(on)
		} else {
			otel.SetTracerProvider(off)
		}
		collection, err := vectorstore.CollectionName("t", "bench", rev)
		if err != nil {
			b.Fatal(err)
		}
		p := plan.Build{Version: plan.Version, Namespace: "t", Index: "bench", Revision: rev, Collection: collection, Shards: 1,
			Source:   plan.Source{Dir: dir},
			Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 48},
			ModelDir: model, Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1},
			Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}}
		cpu0 := cpuTime()
		res, err := Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{})
		cpu := cpuTime() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		return float64(res.Tokens) / cpu.Seconds()
	}
	var offs, ons, ratios []float64
	run("warm", false)
	for i := range pairs {
		// Alternate which goes first, so a drift in the machine's load falls on both.
		var f, o float64
		if i%2 == 0 {
			f, o = run(fmt.Sprintf("off%d", i), false), run(fmt.Sprintf("on%d", i), true)
		} else {
			o, f = run(fmt.Sprintf("on%d", i), true), run(fmt.Sprintf("off%d", i), false)
		}
		offs, ons, ratios = append(offs, f), append(ons, o), append(ratios, o/f)
		b.Logf("pair %d: off %.0f, on %.0f tokens/CPU-s, ratio %.4f", i, f, o, o/f)
	}
	b.ReportMetric(median(offs), "off-tokens/cpu-s")
	b.ReportMetric(median(ons), "on-tokens/cpu-s")
	b.ReportMetric(median(ratios), "on/off")
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
