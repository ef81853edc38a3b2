package evaluate_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/pipeline/evaluate"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 53, traces: an Evaluation Job's evaluate span is a child of the reconcile's span
// given in TRACEPARENT, names the Evaluation and its revision, and carries the failure of a
// run that could not start (here: a collection without a vectorizer, real Weaviate).
func TestEvaluateSpanUnderTheJobsParent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	rctx, reconcile := tp.Tracer("test").Start(context.Background(), "Evaluation reconcile")
	parent, _ := tracing.TraceParent(rctx)
	reconcile.End()
	t.Setenv(tracing.EnvTraceParent, parent)

	wv := weaviatetest.Start(t)
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	name, err := vectorstore.CollectionName("evalq", "plain", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureCollection(t.Context(), vectorstore.CollectionSpec{Name: name, Revision: "r1", Dimensions: 4}); err != nil {
		t.Fatal(err)
	}
	p := plan.Evaluate{Version: plan.Version, Namespace: "evalq", Evaluation: "served", Revision: "r1", Collection: name,
		Dataset: plan.Source{Dir: t.TempDir()}, Split: "test", Mode: ragopsv1alpha1.ModeDense, K: []int{10},
		QueryEmbedding: ragopsv1alpha1.QueryEmbeddingWeaviate,
		Weaviate:       plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}}
	exp.Reset()
	_, runErr := evaluate.Run(tracing.FromEnv(context.Background()), slog.New(slog.NewTextHandler(io.Discard, nil)), p, evaluate.Options{OutDir: t.TempDir()})
	if runErr == nil {
		t.Fatal("evaluated through a collection without a vectorizer")
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the evaluate span alone", len(spans))
	}
	s := spans[0]
	tags := map[string]string{}
	for _, a := range s.Attributes {
		tags[string(a.Key)] = a.Value.Emit()
	}
	if s.Name != "evaluate" || s.Parent.SpanID() != reconcile.SpanContext().SpanID() || s.Parent.TraceID() != reconcile.SpanContext().TraceID() {
		t.Errorf("span %q under %v, want evaluate under the reconcile's %v", s.Name, s.Parent.SpanID(), reconcile.SpanContext().SpanID())
	}
	if tags["ragops.evaluation"] != "served" || tags["ragops.revision"] != "r1" || tags["ragops.collection"] != name {
		t.Errorf("evaluate span tags %v", tags)
	}
	if s.Status.Code != codes.Error || s.Status.Description != runErr.Error() {
		t.Errorf("evaluate span status %v %q, want the run's error %q", s.Status.Code, s.Status.Description, runErr)
	}
}
