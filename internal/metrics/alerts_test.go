package metrics_test

import (
	"testing"
	"time"

	"github.com/ragops/ragops/internal/metrics"
)

func TestSetConditionsOneSeriesPerTypeAndForget(t *testing.T) {
	obj := map[string]string{"namespace": "ns-cond", "kind": "Index", "name": "besluiten"}
	metrics.SetConditions("ns-cond", "Index", "besluiten", []metrics.Condition{
		{Type: "Ready", Status: "False", Reason: "Building"},
		{Type: "Stalled", Status: "False", Reason: "Building"},
	})
	metrics.SetConditions("ns-cond", "Corpus", "besluiten", []metrics.Condition{{Type: "Ready", Status: "True", Reason: "Synced"}})
	if n := len(series(t, "ragops_condition", obj)); n != 2 {
		t.Fatalf("%d condition series of the Index, want 2", n)
	}
	// The build fails: Stalled=True, Ready=False with the new reason; the old series go.
	metrics.SetConditions("ns-cond", "Index", "besluiten", []metrics.Condition{
		{Type: "Ready", Status: "False", Reason: "BuildFailed"},
		{Type: "Stalled", Status: "True", Reason: "BuildFailed"},
	})
	if n := len(series(t, "ragops_condition", obj)); n != 2 {
		t.Fatalf("%d condition series of the Index after a change, want 2", n)
	}
	m := one(t, "ragops_condition", map[string]string{"namespace": "ns-cond", "kind": "Index", "name": "besluiten", "type": "Stalled"})
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["status"] != "True" || labels["reason"] != "BuildFailed" || m.GetGauge().GetValue() != 1 {
		t.Errorf("Stalled series %v = %v, want status True, reason BuildFailed, value 1", labels, m.GetGauge().GetValue())
	}
	metrics.ForgetConditions("ns-cond", "Index", "besluiten")
	if n := len(series(t, "ragops_condition", obj)); n != 0 {
		t.Errorf("%d condition series after the Index went, want 0", n)
	}
	if n := len(series(t, "ragops_condition", map[string]string{"namespace": "ns-cond", "kind": "Corpus"})); n != 1 {
		t.Errorf("%d Corpus series after the Index of the same name went, want 1 (kept)", n)
	}
}

func TestServedCorpusBehindSinceKeepsFirstTimeAndIsForgotten(t *testing.T) {
	l := map[string]string{"namespace": "ns-stale", "index": "besluiten"}
	const name = "ragops_index_served_corpus_behind_since_timestamp_seconds"
	t0 := time.Unix(1_800_000_000, 0)
	metrics.SetServedCorpus("ns-stale", "besluiten", "c1", "c1", t0)
	if v := one(t, name, l).GetGauge().GetValue(); v != 0 {
		t.Errorf("serving the listed revision: %v, want 0", v)
	}
	metrics.SetServedCorpus("ns-stale", "besluiten", "c1", "c2", t0.Add(time.Minute))
	metrics.SetServedCorpus("ns-stale", "besluiten", "c1", "c3", t0.Add(time.Hour)) // the Corpus moves on again
	if v := one(t, name, l).GetGauge().GetValue(); v != float64(t0.Add(time.Minute).Unix()) {
		t.Errorf("behind since %v, want %d (first seen behind)", v, t0.Add(time.Minute).Unix())
	}
	metrics.SetServedCorpus("ns-stale", "besluiten", "c3", "c3", t0.Add(2*time.Hour))
	if v := one(t, name, l).GetGauge().GetValue(); v != 0 {
		t.Errorf("caught up: %v, want 0", v)
	}
	metrics.SetServedCorpus("ns-stale", "besluiten", "c3", "c4", t0.Add(3*time.Hour))
	if v := one(t, name, l).GetGauge().GetValue(); v != float64(t0.Add(3*time.Hour).Unix()) {
		t.Errorf("behind again since %v, want %d", v, t0.Add(3*time.Hour).Unix())
	}
	metrics.SetServedCorpus("ns-stale", "besluiten", "", "c4", t0.Add(4*time.Hour)) // nothing served
	if n := len(series(t, name, l)); n != 0 {
		t.Errorf("%d series with nothing served, want 0", n)
	}
	metrics.SetServedCorpus("ns-stale", "besluiten", "c3", "c4", t0.Add(5*time.Hour))
	metrics.ForgetIndex("ns-stale", "besluiten")
	if n := len(series(t, name, l)); n != 0 {
		t.Errorf("%d series after the Index went, want 0", n)
	}
	metrics.SetServedCorpus("ns-stale", "besluiten", "c4", "c5", t0.Add(6*time.Hour))
	if v := one(t, name, l).GetGauge().GetValue(); v != float64(t0.Add(6*time.Hour).Unix()) {
		t.Errorf("an Index of the same name created again: behind since %v, want %d (not the old time)", v, t0.Add(6*time.Hour).Unix())
	}
}
