package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestHandlerSpansRequests: with tracing on, a request carrying a traceparent header gets a
// server span under that parent with its method, path and status (a 5xx is an error); with
// tracing off the handler runs without a span.
func TestHandlerSpansRequests(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()); on.Store(false) })
	h := Handler("vectors", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if trace.SpanFromContext(r.Context()).IsRecording() != on.Load() {
			t.Errorf("handler span recording %v with tracing on %v", !on.Load(), on.Load())
		}
		if r.URL.Path == "/fail/vectors" {
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	parent, span := tp.Tracer("test").Start(context.Background(), "Weaviate nearText")
	span.End()
	send := func(path string) {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		propagation.TraceContext{}.Inject(parent, propagation.HeaderCarrier(req.Header))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	exp.Reset()
	send("/query/vectors")
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("tracing off: %d spans, want none", n)
	}
	on.Store(true)
	send("/query/vectors")
	send("/fail/vectors")
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want one per request", len(spans))
	}
	for i, s := range spans {
		if s.Name != "POST vectors" || s.SpanKind != trace.SpanKindServer || s.Parent.SpanID() != span.SpanContext().SpanID() {
			t.Errorf("span %q kind %v parent %v, want POST vectors, server, under the caller's span", s.Name, s.SpanKind, s.Parent.SpanID())
		}
		want := []int{200, 500}[i]
		var code int64
		for _, a := range s.Attributes {
			if a.Key == attribute.Key("http.response.status_code") {
				code = a.Value.AsInt64()
			}
		}
		if code != int64(want) || (want == 500) != (s.Status.Code.String() == "Error") {
			t.Errorf("span %d: status code %d (%v), want %d", i, code, s.Status.Code, want)
		}
	}
}
