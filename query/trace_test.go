package query_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/tracing/jaegertest"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
)

// Issue 53, traces: a dense query through an Index's alias (real Weaviate, which embeds it
// through the real model server) is traced to a real Jaeger: a query span (alias, mode, k,
// hits) with its query.search child, and the model server's request span (POST vectors, 200)
// for the embedding Weaviate asked of it.
func TestQueryTraceInJaeger(t *testing.T) {
	jaeger := jaegertest.Start(t)
	dir := servingtest.ModelDir(t, servingtest.EnvMiniLM)
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.OTLPHTTP)
	shutdown, err := tracing.Setup(context.Background(), "ragops-query")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()); otel.SetTracerProvider(noop.NewTracerProvider()) })
	st := servingtest.StartStack(t, dir, "shop", "docs", 20)
	ctx := t.Context()
	hits, err := query.Run(ctx, st.Store, st.Index.Alias, query.Request{Text: st.Index.Queries[0].Text, Mode: vectorstore.ModeDense, K: 5})
	if err != nil || len(hits) != 5 {
		t.Fatalf("query: %d hits, %v", len(hits), err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var spans, served []jaegertest.Span
	deadline := time.Now().Add(time.Minute)
	for (len(spans) < 2 || len(served) == 0) && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if spans, err = jaeger.Search(ctx, "ragops-query", "query"); err != nil {
			t.Fatal(err)
		}
		if served, err = jaeger.Search(ctx, "ragops-query", "POST vectors"); err != nil {
			t.Fatal(err)
		}
	}
	byName := map[string]jaegertest.Span{}
	for _, s := range spans {
		byName[s.OperationName] = s
	}
	q, search := byName["query"], byName["query.search"]
	if q.SpanID == "" || search.Parent() != q.SpanID || q.Parent() != "" {
		t.Fatalf("query trace %v: want a root query span with query.search under it", spans)
	}
	if q.Tag("ragops.alias") != st.Index.Alias || q.Tag("ragops.mode") != string(vectorstore.ModeDense) || q.Int("ragops.k") != 5 || q.Int("ragops.hits") != 5 {
		t.Errorf("query span tags %v", q.Tags)
	}
	var post *jaegertest.Span
	for i := range served {
		if served[i].OperationName == "POST vectors" && served[i].Tag("url.path") == "/query/vectors" {
			post = &served[i]
		}
	}
	if post == nil || post.Int("http.response.status_code") != 200 {
		t.Fatalf("no model server span POST vectors on /query/vectors with status 200 in %v", served)
	}
	t.Logf("query %s: %d spans; model server %s %v", q.TraceID, len(spans), post.OperationName, post.Tags)
}
