// Package tracing sets up OpenTelemetry traces for every ragops process from the standard
// OTEL_* environment variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/),
// and carries a trace's context from the manager to the pods of the Jobs it creates.
//
// Tracing is off unless an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OTEL_SDK_DISABLED is not "true": then no exporter
// exists, no connection is attempted and every span is OpenTelemetry's non-recording no-op.
// When on, spans go over OTLP (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: "http/protobuf", the
// default, or "grpc") through a batch span processor; the exporters read the endpoint, headers,
// timeout, TLS and compression variables, the SDK the sampler (OTEL_TRACES_SAMPLER[_ARG]),
// the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) and the batch limits (OTEL_BSP_*).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables that carry a W3C trace context into a worker pod (the names of
// OpenTelemetry's environment-variable carrier), and the Job annotation that records it.
const (
	EnvTraceParent        = "TRACEPARENT"
	EnvTraceState         = "TRACESTATE"
	AnnotationTraceParent = "ragops.dev/traceparent"
)

// ScopeName is the instrumentation scope of every ragops span.
const ScopeName = "github.com/ragops/ragops"

// Enabled reports whether the environment (looked up with getenv) turns tracing on: an OTLP
// traces endpoint is set and the SDK is not disabled.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup installs the process's tracer provider from the environment when tracing is on
// (Enabled), with service (e.g. "ragops-manager") as service.name unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES names one. It returns a shutdown that flushes the spans still
// queued (call it before the process exits; a no-op when tracing is off). Errors: an unknown
// protocol, or an exporter that cannot be built from the variables.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if !Enabled(os.Getenv) {
		return noop, nil
	}
	var exp sdktrace.SpanExporter
	switch proto := protocol(); proto {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return noop, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: ragops exports traces over grpc or http/protobuf", proto)
	}
	if err != nil {
		return noop, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return noop, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(newDeferring(sdktrace.NewBatchSpanProcessor(exp))), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	on.Store(true)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error { on.Store(false); return tp.Shutdown(ctx) }, nil
}

// protocol is the OTLP protocol for traces: the traces variable, the general one, else
// http/protobuf (the specification's default).
func protocol() string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return "http/protobuf"
}

// Start starts a span of ragops's tracer (the global provider's: a no-op while tracing is
// off) as a child of ctx's span.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return otel.Tracer(ScopeName).Start(ctx, name, opts...)
}

// FromEnv returns ctx with the remote parent its process was given in TRACEPARENT and
// TRACESTATE (a worker pod's, see JobEnv); ctx unchanged when they carry none.
func FromEnv(ctx context.Context) context.Context {
	c := propagation.MapCarrier{}
	if v := os.Getenv(EnvTraceParent); v != "" {
		c["traceparent"] = v
	}
	if v := os.Getenv(EnvTraceState); v != "" {
		c["tracestate"] = v
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}

// TraceParent returns the W3C traceparent and tracestate of ctx's span ("" when it has none,
// as while tracing is off).
func TraceParent(ctx context.Context) (parent, state string) {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// forwarded are the variables (names, or prefixes ending in "_") a process passes to the
// worker pods it starts, so they export to the same backend the same way: everything but
// the service name, which is each process's own.
var forwarded = []string{"OTEL_EXPORTER_OTLP_", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_",
	"OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED", "OTEL_PROPAGATORS"}

// JobEnv returns the environment a worker pod started under ctx needs to trace as a child of
// ctx's span: this process's OTLP settings (the OTEL_* variables but OTEL_SERVICE_NAME,
// sorted by name) and, when ctx has a span, TRACEPARENT (and TRACESTATE). Nil while tracing
// is off, so Jobs made without tracing are unchanged.
func JobEnv(ctx context.Context) [][2]string {
	if !Enabled(os.Getenv) {
		return nil
	}
	var env [][2]string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			continue
		}
		for _, f := range forwarded {
			if k == f || (strings.HasSuffix(f, "_") && strings.HasPrefix(k, f)) {
				env = append(env, [2]string{k, v})
				break
			}
		}
	}
	sort.Slice(env, func(i, j int) bool { return env[i][0] < env[j][0] })
	parent, state := TraceParent(ctx)
	if parent != "" {
		env = append(env, [2]string{EnvTraceParent, parent})
	}
	if state != "" {
		env = append(env, [2]string{EnvTraceState, state})
	}
	return env
}

// Reconcile starts the deferred span of one reconcile of kind's object namespace/name
// ("Index reconcile"): exported only when the reconcile did work (Keep: a status written, a
// Job created) or failed. end ends it with the reconcile's error.
func Reconcile(ctx context.Context, kind, namespace, name string) (_ context.Context, end func(error)) {
	ctx, span := StartDeferred(ctx, kind+" reconcile", trace.WithAttributes(attribute.String("ragops.kind", kind),
		attribute.String("ragops.namespace", namespace), attribute.String("ragops.name", name)))
	return ctx, func(err error) { End(span, err) }
}

// End marks err (if any) on span and ends it.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
