package tracing

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// otlpListener accepts TCP connections and reports each on the returned channel: a stand-in
// OTLP endpoint that tells whether anything tried to export.
func otlpListener(t *testing.T, addr string) (string, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		// The default port may be taken on a shared machine: that check is then left out.
		t.Logf("cannot listen on %s: %v", addr, err)
		return "", nil
	}
	t.Cleanup(func() { _ = l.Close() })
	got := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			got <- struct{}{}
			_ = c.Close()
		}
	}()
	return l.Addr().String(), got
}

// clearOTEL unsets every variable that could turn tracing on for the test.
func clearOTEL(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", EnvTraceParent, EnvTraceState} {
		t.Setenv(k, "")
	}
}

// traceSome runs Setup, records a few spans, flushes with the shutdown and returns whether the
// spans recorded and the provider installed.
func traceSome(t *testing.T) (recording bool, provider trace.TracerProvider) {
	t.Helper()
	otel.SetTracerProvider(noop.NewTracerProvider()) // what a process starts with
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	shutdown, err := Setup(context.Background(), "ragops-test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := Start(context.Background(), "root")
	recording = span.IsRecording()
	for range 3 {
		_, child := Start(ctx, "child")
		child.End()
	}
	span.End()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = shutdown(sctx)
	return recording, otel.GetTracerProvider()
}

// TestOffWithoutEndpoint: with no OTLP endpoint (or with OTEL_SDK_DISABLED=true beside one)
// Setup installs nothing, spans do not record, Jobs get no tracing environment and nothing
// connects to the default OTLP port or to the configured endpoint. With the endpoint alone the
// same spans record and are exported to it (the check can fail).
func TestOffWithoutEndpoint(t *testing.T) {
	clearOTEL(t)
	// The default OTLP/HTTP endpoint, where an exporter built without an endpoint would go.
	_, defaultHits := otlpListener(t, "127.0.0.1:4318")
	addr, hits := otlpListener(t, "127.0.0.1:0")

	recording, tp := traceSome(t)
	if recording {
		t.Error("span records without an endpoint")
	}
	if _, sdk := tp.(interface{ Shutdown(context.Context) error }); sdk {
		t.Errorf("an SDK tracer provider (%T) is installed without an endpoint", tp)
	}
	if env := JobEnv(context.Background()); env != nil {
		t.Errorf("JobEnv without an endpoint = %v, want none", env)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if recording, _ = traceSome(t); recording {
		t.Error("span records with OTEL_SDK_DISABLED=true")
	}
	select {
	case <-hits:
		t.Error("an exporter connected to the endpoint although OTEL_SDK_DISABLED=true")
	case <-defaultHits:
		t.Error("an exporter connected to the default OTLP endpoint although none is configured")
	case <-time.After(500 * time.Millisecond):
	}

	// The control: the endpoint alone turns tracing on and the spans reach it.
	t.Setenv("OTEL_SDK_DISABLED", "")
	if recording, _ = traceSome(t); !recording {
		t.Error("span does not record with an endpoint")
	}
	select {
	case <-hits:
	case <-time.After(10 * time.Second):
		t.Error("nothing connected to the configured endpoint")
	}
}

// TestJobEnvCarriesParent: with tracing on, JobEnv forwards the OTLP settings (not the
// service name) and the span's traceparent, which FromEnv in the pod turns back into the
// remote parent.
func TestJobEnvCarriesParent(t *testing.T) {
	clearOTEL(t)
	addr, _ := otlpListener(t, "127.0.0.1:0")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	t.Setenv("OTEL_SERVICE_NAME", "ragops-manager")
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	shutdown, err := Setup(context.Background(), "ragops-test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	ctx, span := Start(context.Background(), "reconcile")
	defer span.End()
	env := map[string]string{}
	for _, kv := range JobEnv(ctx) {
		env[kv[0]] = kv[1]
	}
	if env["OTEL_EXPORTER_OTLP_ENDPOINT"] != "http://"+addr || env["OTEL_TRACES_SAMPLER"] != "parentbased_always_on" {
		t.Errorf("JobEnv = %v: OTLP settings not forwarded", env)
	}
	if _, ok := env["OTEL_SERVICE_NAME"]; ok {
		t.Errorf("JobEnv forwards OTEL_SERVICE_NAME: %v", env)
	}
	t.Setenv(EnvTraceParent, env[EnvTraceParent])
	remote := trace.SpanContextFromContext(FromEnv(context.Background()))
	if !remote.IsRemote() || remote.TraceID() != span.SpanContext().TraceID() || remote.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("FromEnv(%s=%q) = %v, want the parent %v", EnvTraceParent, env[EnvTraceParent], remote, span.SpanContext())
	}
}

// TestDeferredSpanKeptOnlyForWork: a deferred span (a reconcile's) and the spans under it are
// exported together when one of them did work (Keep) or failed, and not at all otherwise (a
// reconcile with nothing to do); spans outside deferred ones are exported as they end.
func TestDeferredSpanKeptOnlyForWork(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newDeferring(sdktrace.NewSimpleSpanProcessor(exp))))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	reconcile := func(work, fail bool) {
		ctx, end := Reconcile(context.Background(), "Index", "ns", "idx")
		for _, step := range []string{"resolveInputs", "reconcileBuild"} {
			sctx, span := Start(ctx, step)
			if work && step == "reconcileBuild" {
				Keep(sctx, "job created")
			}
			span.End()
		}
		var err error
		if fail {
			err = errors.New("weaviate unreachable")
		}
		end(err)
	}
	names := func() []string {
		var out []string
		for _, s := range exp.GetSpans() {
			out = append(out, s.Name)
		}
		exp.Reset()
		return out
	}
	reconcile(false, false)
	if got := names(); len(got) != 0 {
		t.Errorf("a reconcile without work exported %v", got)
	}
	reconcile(true, false)
	if got := strings.Join(names(), ","); got != "resolveInputs,reconcileBuild,Index reconcile" {
		t.Errorf("a reconcile that created a Job exported %q, want its span and its steps", got)
	}
	reconcile(false, true)
	if got := strings.Join(names(), ","); got != "resolveInputs,reconcileBuild,Index reconcile" {
		t.Errorf("a failed reconcile exported %q, want its span and its steps", got)
	}
	_, span := Start(context.Background(), "build.shard")
	span.End()
	if got := names(); len(got) != 1 {
		t.Errorf("a span outside reconciles exported %v, want it alone", got)
	}
}
