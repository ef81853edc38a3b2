package controllers_test

// Issue 53, traces: the reconcile that creates a worker Job is traced, and the Job's pods get
// its trace context and the manager's OTLP settings.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/tracing/jaegertest"
)

// A Corpus's scan Job carries TRACEPARENT (and the same value in its
// ragops.dev/traceparent annotation) and the manager's OTEL_EXPORTER_OTLP_ENDPOINT; the span
// it names is in a real Jaeger, the step of a "Corpus reconcile" span of that Corpus, which
// is the trace's root (exported because the reconcile created the Job).
func TestScanJobCarriesTheReconcileTrace(t *testing.T) {
	jaeger := jaegertest.Start(t)
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", jaeger.OTLPHTTP)
	shutdown, err := tracing.Setup(context.Background(), "ragops-manager")
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	flush := func() {
		if !flushed {
			flushed = true
			_ = shutdown(context.Background())
			otel.SetTracerProvider(noop.NewTracerProvider())
		}
	}
	t.Cleanup(flush)

	ns := newNamespace(t)
	ctx := context.Background()
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{Git: &ragopsv1alpha1.GitSource{URL: "https://git.example.org/besluiten.git", Ref: "main"}}}
	if err := env.Client.Create(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	eventually(t, 60*time.Second, "scan Job", func() (bool, error) {
		jobs := ownedJobs(t, ns, corpus)
		if len(jobs) == 1 {
			job = jobs[0]
		}
		return len(jobs) == 1, nil
	})
	jobEnv := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		jobEnv[e.Name] = e.Value
	}
	parent := jobEnv[tracing.EnvTraceParent]
	if jobEnv["OTEL_EXPORTER_OTLP_ENDPOINT"] != jaeger.OTLPHTTP {
		t.Errorf("Job env OTEL_EXPORTER_OTLP_ENDPOINT=%q, want the manager's %q", jobEnv["OTEL_EXPORTER_OTLP_ENDPOINT"], jaeger.OTLPHTTP)
	}
	if job.Annotations[tracing.AnnotationTraceParent] != parent {
		t.Errorf("Job annotation %s=%q, env %s=%q; want the same", tracing.AnnotationTraceParent, job.Annotations[tracing.AnnotationTraceParent], tracing.EnvTraceParent, parent)
	}
	parts := strings.Split(parent, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		t.Fatalf("Job env %s=%q, want a W3C traceparent", tracing.EnvTraceParent, parent)
	}
	flush() // the reconcile spans go to Jaeger

	var spans []jaegertest.Span
	var step *jaegertest.Span
	eventually(t, 60*time.Second, "the Job's parent span in Jaeger", func() (bool, error) {
		var err error
		if spans, err = jaeger.Trace(ctx, parts[1]); err != nil {
			return false, err
		}
		for i := range spans {
			if spans[i].SpanID == parts[2] {
				step = &spans[i]
			}
		}
		return step != nil, nil
	})
	byID := map[string]jaegertest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	root := *step
	for root.Parent() != "" {
		p, ok := byID[root.Parent()]
		if !ok {
			t.Fatalf("span %s's parent %s is not in the trace", root.OperationName, root.Parent())
		}
		root = p
	}
	if root.OperationName != "Corpus reconcile" || root.Tag("ragops.namespace") != ns || root.Tag("ragops.name") != "besluiten" ||
		root.Service != "ragops-manager" {
		t.Errorf("the Job's trace has root %s (%s) %v, want the Corpus reconcile of %s/besluiten", root.OperationName, root.Service, root.Tags, ns)
	}
	if step.Parent() != root.SpanID || step.Tag("ragops.work") != "job created" {
		t.Errorf("the Job's parent span %s (work %v) is not a step of the reconcile that created it", step.OperationName, step.Tag("ragops.work"))
	}
	t.Logf("scan Job %s: parent %s, step %s of %s, %d spans in the trace", job.Name, parent, step.OperationName, root.OperationName, len(spans))
	if os.Getenv("RAGOPS_TRACE_TREE") != "" {
		for _, s := range spans {
			t.Logf("%s %s parent=%s %v", s.SpanID, s.OperationName, s.Parent(), s.Tags)
		}
	}
}
