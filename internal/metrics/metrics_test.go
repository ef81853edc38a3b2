package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ragops/ragops/internal/metrics"
)

// series returns the gathered series of one metric family whose labels include match.
func series(t *testing.T, name string, match map[string]string) []*dto.Metric {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue next
				}
			}
			out = append(out, m)
		}
	}
	return out
}

func one(t *testing.T, name string, match map[string]string) *dto.Metric {
	t.Helper()
	s := series(t, name, match)
	if len(s) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, match, len(s))
	}
	return s[0]
}

func TestObserveBuildCountsAndThroughput(t *testing.T) {
	l := map[string]string{"namespace": "ns-build", "index": "besluiten"}
	metrics.ObserveBuild("ns-build", "besluiten", "r1", 3, 6, 600, 2)
	metrics.ObserveEmbedded("ns-build", "besluiten", 1, 2, -5) // a sync; negative tokens ignored
	if v := one(t, "ragops_index_documents_embedded_total", l).GetCounter().GetValue(); v != 4 {
		t.Errorf("documents embedded %v, want 4", v)
	}
	if v := one(t, "ragops_index_chunks_embedded_total", l).GetCounter().GetValue(); v != 8 {
		t.Errorf("chunks embedded %v, want 8", v)
	}
	if v := one(t, "ragops_index_tokens_embedded_total", l).GetCounter().GetValue(); v != 600 {
		t.Errorf("tokens embedded %v, want 600", v)
	}
	if v := one(t, "ragops_index_build_tokens_per_second", map[string]string{"index": "besluiten", "revision": "r1"}).GetGauge().GetValue(); v != 300 {
		t.Errorf("tokens/s %v, want 300", v)
	}
	h := one(t, "ragops_index_build_duration_seconds", l).GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 2 {
		t.Errorf("duration histogram count %d sum %v, want 1 and 2", h.GetSampleCount(), h.GetSampleSum())
	}
	metrics.ObserveBuildFailure("ns-build", "besluiten", "besluiten-r9-build")
	metrics.ObserveBuildFailure("ns-build", "besluiten", "besluiten-r9-build") // the same Job again
	if v := one(t, "ragops_index_builds_total", map[string]string{"index": "besluiten", "result": "failed"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("failed builds %v, want 1", v)
	}
	if v := one(t, "ragops_index_builds_total", map[string]string{"index": "besluiten", "result": "succeeded"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("succeeded builds %v, want 1", v)
	}
	// A retried reconcile observing the same revision again changes nothing.
	metrics.ObserveBuild("ns-build", "besluiten", "r1", 3, 6, 600, 2)
	if v := one(t, "ragops_index_documents_embedded_total", l).GetCounter().GetValue(); v != 4 {
		t.Errorf("documents embedded %v after a repeated ObserveBuild, want still 4", v)
	}
	// Zero seconds (a result without timing) must not divide by zero.
	metrics.ObserveBuild("ns-build", "besluiten", "r2", 1, 1, 10, 0)
	if s := series(t, "ragops_index_build_tokens_per_second", map[string]string{"revision": "r2"}); len(s) != 0 {
		t.Errorf("tokens/s recorded for a build without seconds: %v", s)
	}
}

func TestSetActiveRevisionKeepsOneSeriesPerIndex(t *testing.T) {
	metrics.SetActiveRevision("ns-alias", "a", "r1")
	metrics.SetActiveRevision("ns-alias", "b", "r9")
	metrics.SetActiveRevision("ns-alias", "a", "r2")
	s := series(t, "ragops_index_active_revision_info", map[string]string{"namespace": "ns-alias", "index": "a"})
	if len(s) != 1 {
		t.Fatalf("%d active revision series for index a, want 1", len(s))
	}
	for _, l := range s[0].GetLabel() {
		if l.GetName() == "revision" && l.GetValue() != "r2" {
			t.Errorf("active revision %q, want r2", l.GetValue())
		}
	}
	if len(series(t, "ragops_index_active_revision_info", map[string]string{"namespace": "ns-alias", "index": "b", "revision": "r9"})) != 1 {
		t.Error("moving index a's alias removed index b's series")
	}
	metrics.SetActiveRevision("ns-alias", "a", "")
	if n := len(series(t, "ragops_index_active_revision_info", map[string]string{"namespace": "ns-alias", "index": "a"})); n != 0 {
		t.Errorf("empty revision left %d series", n)
	}
}

func TestObserveEvaluationPerKAndForget(t *testing.T) {
	metrics.ObserveEvaluation("ns-eval", "gate", "besluiten", "hybrid", 10, 0.8612, 0.7, 0.65)
	metrics.ObserveEvaluation("ns-eval", "gate", "besluiten", "hybrid", 100, 0.95, 0.72, 0.66)
	metrics.SetEvaluationCompleted("ns-eval", "gate", "besluiten", time.Unix(1_790_000_000, 5e8))
	if v := one(t, "ragops_evaluation_recall", map[string]string{"evaluation": "gate", "k": "10", "mode": "hybrid"}).GetGauge().GetValue(); v != 0.8612 {
		t.Errorf("recall@10 %v, want 0.8612", v)
	}
	if v := one(t, "ragops_evaluation_ndcg", map[string]string{"evaluation": "gate", "k": "100"}).GetGauge().GetValue(); v != 0.72 {
		t.Errorf("nDCG@100 %v, want 0.72", v)
	}
	if v := one(t, "ragops_evaluation_mrr", map[string]string{"evaluation": "gate", "k": "10"}).GetGauge().GetValue(); v != 0.65 {
		t.Errorf("MRR@10 %v, want 0.65", v)
	}
	if v := one(t, "ragops_evaluation_last_completion_timestamp_seconds", map[string]string{"evaluation": "gate"}).GetGauge().GetValue(); v != 1_790_000_000.5 {
		t.Errorf("completion timestamp %v, want 1790000000.5", v)
	}
	metrics.ForgetEvaluation("ns-eval", "gate")
	for _, n := range []string{"ragops_evaluation_recall", "ragops_evaluation_ndcg", "ragops_evaluation_mrr", "ragops_evaluation_last_completion_timestamp_seconds"} {
		if s := series(t, n, map[string]string{"namespace": "ns-eval"}); len(s) != 0 {
			t.Errorf("%s: %d series left after ForgetEvaluation", n, len(s))
		}
	}
}

// An Evaluation's series follow the Index it measures: figures or a quality state under
// another index remove those under the old one (spec.indexRef changed), so no series stays
// at 1 under an Index the Evaluation no longer measures; ForgetQualityDropped removes the
// quality series alone (spec.alert removed).
func TestEvaluationSeriesFollowTheIndexAndQualityIsForgotten(t *testing.T) {
	ev := map[string]string{"namespace": "ns-move", "evaluation": "nightly"}
	metrics.ObserveEvaluation("ns-move", "nightly", "old", "BM25", 10, 0.8, 0.7, 0.6)
	metrics.SetQualityDropped("ns-move", "nightly", "old", true)
	metrics.SetQualityDropped("ns-move", "nightly", "new", true)
	if s := series(t, "ragops_evaluation_quality_dropped", ev); len(s) != 1 || s[0].GetGauge().GetValue() != 1 {
		t.Fatalf("quality_dropped after moving to index new: %v, want one series", s)
	}
	if s := series(t, "ragops_evaluation_quality_dropped", map[string]string{"namespace": "ns-move", "index": "old"}); len(s) != 0 {
		t.Errorf("quality_dropped still has %d series under index old", len(s))
	}
	if s := series(t, "ragops_evaluation_recall", map[string]string{"namespace": "ns-move", "index": "old"}); len(s) != 0 {
		t.Errorf("recall still has %d series under index old", len(s))
	}
	metrics.ObserveEvaluation("ns-move", "nightly", "new", "BM25", 10, 0.8, 0.7, 0.6)
	metrics.ForgetQualityDropped("ns-move", "nightly")
	if s := series(t, "ragops_evaluation_quality_dropped", ev); len(s) != 0 {
		t.Errorf("quality_dropped: %d series after ForgetQualityDropped", len(s))
	}
	if s := series(t, "ragops_evaluation_recall", ev); len(s) != 1 {
		t.Errorf("recall: %d series after ForgetQualityDropped, want the one under index new", len(s))
	}
	metrics.ForgetEvaluation("ns-move", "nightly")
}

func TestForgetIndexAndRevision(t *testing.T) {
	metrics.ObserveBuild("ns-forget", "x", "r1", 1, 1, 100, 1)
	metrics.ObserveBuild("ns-forget", "x", "r2", 1, 1, 100, 1)
	metrics.ObserveBuild("ns-forget", "y", "r1", 1, 1, 100, 1)
	metrics.SetActiveRevision("ns-forget", "x", "r2")
	metrics.ForgetRevision("ns-forget", "x", "r1")
	if n := len(series(t, "ragops_index_build_tokens_per_second", map[string]string{"namespace": "ns-forget", "index": "x"})); n != 1 {
		t.Errorf("after ForgetRevision r1: %d tokens/s series for x, want 1 (r2)", n)
	}
	metrics.ObserveBuild("ns-forget", "x", "r1", 1, 1, 100, 1) // forgotten, so counted anew
	if v := one(t, "ragops_index_builds_total", map[string]string{"namespace": "ns-forget", "index": "x", "result": "succeeded"}).GetCounter().GetValue(); v != 3 {
		t.Errorf("succeeded builds of x %v, want 3 (r1, r2, r1 again after ForgetRevision)", v)
	}
	metrics.ForgetIndex("ns-forget", "x")
	for _, n := range []string{"ragops_index_documents_embedded_total", "ragops_index_chunks_embedded_total", "ragops_index_tokens_embedded_total",
		"ragops_index_builds_total", "ragops_index_build_duration_seconds", "ragops_index_build_tokens_per_second", "ragops_index_active_revision_info"} {
		if s := series(t, n, map[string]string{"namespace": "ns-forget", "index": "x"}); len(s) != 0 {
			t.Errorf("%s: %d series of x left after ForgetIndex", n, len(s))
		}
	}
	if len(series(t, "ragops_index_documents_embedded_total", map[string]string{"namespace": "ns-forget", "index": "y"})) != 1 {
		t.Error("ForgetIndex(x) removed index y's series")
	}
}

// TestNamesPassPromlint runs Prometheus's own metric linter over the ragops families.
func TestNamesPassPromlint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, c := range metrics.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	metrics.ObserveBuild("ns-lint", "i", "r", 1, 1, 1, 1)
	metrics.SetActiveRevision("ns-lint", "i", "r")
	metrics.SetTruncatedChunks("ns-lint", "i", "r", 1)
	metrics.ObserveEvaluation("ns-lint", "e", "i", "dense", 10, 0.5, 0.5, 0.5)
	metrics.SetEvaluationCompleted("ns-lint", "e", "i", time.Now())
	metrics.SetQualityDropped("ns-lint", "e", "i", true)
	metrics.SetBuildProgress("ns-lint", "i", true, "r", 1, 2)
	metrics.ObserveWeaviateCall("SetAlias", nil)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), metrics.Namespace+"_") {
			t.Errorf("metric %s lacks the %s_ prefix", mf.GetName(), metrics.Namespace)
		}
	}
	if len(mfs) != len(metrics.Collectors()) {
		t.Errorf("%d families gathered, want %d", len(mfs), len(metrics.Collectors()))
	}
}

// TestTruncatedChunksPerRevision: the gauge holds each revision's count and goes with
// ForgetRevision.
func TestTruncatedChunksPerRevision(t *testing.T) {
	metrics.SetTruncatedChunks("ns-trunc", "docs", "r1", 12)
	metrics.SetTruncatedChunks("ns-trunc", "docs", "r2", 0)
	metrics.SetTruncatedChunks("ns-trunc", "docs", "r1", 12) // a retried reconcile
	if v := one(t, "ragops_index_truncated_chunks", map[string]string{"namespace": "ns-trunc", "revision": "r1"}).GetGauge().GetValue(); v != 12 {
		t.Errorf("r1: %v truncated chunks, want 12", v)
	}
	metrics.ForgetRevision("ns-trunc", "docs", "r1")
	if s := series(t, "ragops_index_truncated_chunks", map[string]string{"namespace": "ns-trunc"}); len(s) != 1 {
		t.Errorf("%d series after ForgetRevision(r1), want 1 (r2)", len(s))
	}
	metrics.ForgetIndex("ns-trunc", "docs")
	if s := series(t, "ragops_index_truncated_chunks", map[string]string{"namespace": "ns-trunc"}); len(s) != 0 {
		t.Errorf("%d series after ForgetIndex, want 0", len(s))
	}
}
