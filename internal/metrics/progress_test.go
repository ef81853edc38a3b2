package metrics_test

import (
	"errors"
	"testing"

	"github.com/ragops/ragops/internal/metrics"
)

func TestSetBuildProgressOnlyWhileRunning(t *testing.T) {
	l := map[string]string{"namespace": "ns-progress", "index": "besluiten"}
	metrics.SetBuildProgress("ns-progress", "besluiten", true, "r1", 120, 5183)
	if v := one(t, "ragops_index_builds_running", l).GetGauge().GetValue(); v != 1 {
		t.Errorf("builds running %v, want 1", v)
	}
	for state, want := range map[string]float64{"done": 120, "total": 5183} {
		m := one(t, "ragops_index_build_documents", map[string]string{"index": "besluiten", "revision": "r1", "state": state})
		if v := m.GetGauge().GetValue(); v != want {
			t.Errorf("documents %s %v, want %v", state, v, want)
		}
	}
	// The next build's revision replaces the old series.
	metrics.SetBuildProgress("ns-progress", "besluiten", true, "r2", 7, 5183)
	if s := series(t, "ragops_index_build_documents", map[string]string{"namespace": "ns-progress", "revision": "r1"}); len(s) != 0 {
		t.Errorf("%d series of the old revision r1 remain", len(s))
	}
	metrics.SetBuildProgress("ns-progress", "besluiten", false, "", 0, 0)
	if v := one(t, "ragops_index_builds_running", l).GetGauge().GetValue(); v != 0 {
		t.Errorf("builds running %v after the build, want 0", v)
	}
	if s := series(t, "ragops_index_build_documents", l); len(s) != 0 {
		t.Errorf("%d document series remain with no build running", len(s))
	}
	metrics.ForgetIndex("ns-progress", "besluiten")
	if s := series(t, "ragops_index_builds_running", l); len(s) != 0 {
		t.Errorf("builds_running still exported after ForgetIndex")
	}
}

func TestObserveWeaviateCallCountsErrors(t *testing.T) {
	op := map[string]string{"operation": "TestOnlyOp"}
	metrics.ObserveWeaviateCall("TestOnlyOp", nil)
	if v := one(t, "ragops_weaviate_request_errors_total", op).GetCounter().GetValue(); v != 0 {
		t.Errorf("errors %v after a successful call, want a 0 series", v)
	}
	metrics.ObserveWeaviateCall("TestOnlyOp", errors.New("connection refused"))
	metrics.ObserveWeaviateCall("TestOnlyOp", nil)
	if v := one(t, "ragops_weaviate_requests_total", op).GetCounter().GetValue(); v != 3 {
		t.Errorf("requests %v, want 3", v)
	}
	if v := one(t, "ragops_weaviate_request_errors_total", op).GetCounter().GetValue(); v != 1 {
		t.Errorf("errors %v, want 1", v)
	}
}

// A tracked Index's counters and histogram exist at zero before its first build or failure,
// so that the first increment is an increase Prometheus sees; ForgetIndex removes them.
func TestTrackIndexCreatesSeriesAtZero(t *testing.T) {
	l := map[string]string{"namespace": "ns-track", "index": "besluiten"}
	metrics.TrackIndex("ns-track", "besluiten")
	for _, name := range []string{"ragops_index_documents_embedded_total", "ragops_index_chunks_embedded_total", "ragops_index_tokens_embedded_total"} {
		if v := one(t, name, l).GetCounter().GetValue(); v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
	for _, result := range []string{metrics.ResultSucceeded, metrics.ResultFailed} {
		if v := one(t, "ragops_index_builds_total", map[string]string{"namespace": "ns-track", "index": "besluiten", "result": result}).GetCounter().GetValue(); v != 0 {
			t.Errorf("builds_total{result=%s} = %v, want 0", result, v)
		}
	}
	if n := one(t, "ragops_index_build_duration_seconds", l).GetHistogram().GetSampleCount(); n != 0 {
		t.Errorf("build duration count %d, want 0", n)
	}
	metrics.ObserveBuildFailure("ns-track", "besluiten", "besluiten-build-1")
	metrics.TrackIndex("ns-track", "besluiten") // the next reconcile keeps the count
	if v := one(t, "ragops_index_builds_total", map[string]string{"namespace": "ns-track", "index": "besluiten", "result": metrics.ResultFailed}).GetCounter().GetValue(); v != 1 {
		t.Errorf("builds_total{result=failed} = %v after one failure, want 1", v)
	}
	metrics.ForgetIndex("ns-track", "besluiten")
	for _, name := range []string{"ragops_index_builds_total", "ragops_index_tokens_embedded_total", "ragops_index_build_duration_seconds"} {
		if s := series(t, name, l); len(s) != 0 {
			t.Errorf("%s still exported after ForgetIndex", name)
		}
	}
}
