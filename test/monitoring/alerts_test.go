package monitoring

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragops/ragops/internal/testenv"
)

// promAlert is an alert as Prometheus's /api/v1/alerts lists it.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
}

// key writes an alert's labels as alertname{name="value",...}, sorted.
func key(labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		if k != "alertname" && k != "alertstate" && k != "__name__" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	slices.Sort(parts)
	return labels["alertname"] + "{" + strings.Join(parts, ",") + "}"
}

// alerts returns the alerts Prometheus has now, by key, in state (pending or firing).
func (s *stack) alerts(t *testing.T, state string) map[string]promAlert {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	s.api(t, "/api/v1/alerts", nil, &data)
	out := map[string]promAlert{}
	for _, a := range data.Alerts {
		if a.State == state {
			out[key(a.Labels)] = a
		}
	}
	return out
}

// TestAlertsFireOnRealPrometheus runs Prometheus against the manager with the chart's
// PrometheusRule as its rule file (durations and thresholds shortened through the chart's
// values: chartValues) and the demo workload: Index handbook serves a corpus revision behind
// the one its Corpus lists (its sync never finishes), Index archive's first build failed
// (Stalled, BuildFailed). Exactly these alerts reach firing in Prometheus's own API, with
// their labels and runbook links: RagopsIndexServingStaleContent for handbook, RagopsStalled
// and RagopsIndexBuildsFailing (one failure an hour) for archive; RagopsIndexNotReady for
// archive is pending (notReadyFor keeps its 2h); no other alert fired at any time.
func TestAlertsFireOnRealPrometheus(t *testing.T) {
	d := demoWorkload(t)
	want := []map[string]string{
		{"alertname": "RagopsIndexServingStaleContent", "namespace": d.ns, "index": staleIndex, "severity": "warning"},
		{"alertname": "RagopsStalled", "namespace": d.ns, "kind": "Index", "name": stalledIndex, "reason": "BuildFailed", "severity": "warning"},
		{"alertname": "RagopsIndexBuildsFailing", "namespace": d.ns, "index": stalledIndex, "severity": "warning"},
	}
	var wantKeys []string
	for _, w := range want {
		wantKeys = append(wantKeys, key(w))
	}
	slices.Sort(wantKeys)

	var firing map[string]promAlert
	testenv.Eventually(t, 2*time.Minute, "the alerts firing", func() (bool, error) {
		firing = d.alerts(t, "firing")
		for _, k := range wantKeys {
			if _, ok := firing[k]; !ok {
				return false, fmt.Errorf("%s not firing; firing: %v; pending: %v", k, keys(firing), keys(d.alerts(t, "pending")))
			}
		}
		return true, nil
	})
	if got := keys(firing); !slices.Equal(got, wantKeys) {
		t.Errorf("firing alerts:\n  %s\nwant exactly:\n  %s", strings.Join(got, "\n  "), strings.Join(wantKeys, "\n  "))
	}
	for k, a := range firing {
		anchor := "#" + strings.ToLower(a.Labels["alertname"])
		if !strings.HasPrefix(a.Annotations["runbook_url"], "https://") || !strings.HasSuffix(a.Annotations["runbook_url"], anchor) {
			t.Errorf("%s: runbook_url %q, want a link ending in %s", k, a.Annotations["runbook_url"], anchor)
		}
		if a.Annotations["summary"] == "" || strings.Contains(a.Annotations["summary"], "<no value>") {
			t.Errorf("%s: summary %q", k, a.Annotations["summary"])
		}
	}
	notReady := key(map[string]string{"alertname": "RagopsIndexNotReady", "namespace": d.ns, "name": stalledIndex, "severity": "warning"})
	if _, ok := d.alerts(t, "pending")[notReady]; !ok {
		t.Errorf("%s is not pending (its expression must hold for the Stalled Index; notReadyFor keeps it from firing)", notReady)
	}

	// Nothing else fired at any time since Prometheus started: ALERTS is the series Prometheus
	// writes for every pending and firing alert at each evaluation.
	since := int(time.Since(d.started).Seconds()) + 1
	var everFired queryResult
	d.api(t, "/api/v1/query", url.Values{"query": {fmt.Sprintf(`max_over_time(ALERTS{alertstate="firing"}[%ds])`, since)}}, &everFired)
	var ever []string
	for _, r := range everFired.Result {
		ever = append(ever, key(r.Metric))
	}
	slices.Sort(ever)
	if !slices.Equal(ever, wantKeys) {
		t.Errorf("alerts that fired since Prometheus started:\n  %s\nwant exactly:\n  %s", strings.Join(ever, "\n  "), strings.Join(wantKeys, "\n  "))
	}
}

// keys returns the keys of m, sorted.
func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
