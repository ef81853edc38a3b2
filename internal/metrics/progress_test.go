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
