package packaging

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragops/ragops/internal/metrics"
)

// exported returns the labels (with __name__) and value of the one series of metric name
// whose labels include match, as the manager's metrics endpoint serves it now (the
// internal/metrics collectors, set by the calls the controllers make).
func exported(t *testing.T, name string, match map[string]string) (map[string]string, float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []map[string]string
	var value float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{"__name__": name}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue next
				}
			}
			found = append(found, labels)
			value = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	if len(found) != 1 {
		t.Fatalf("the manager exports %d series %s%v, want 1: %v", len(found), name, match, found)
	}
	return found[0], value
}

// conditionSeries sets an object's conditions as the StatusPatcher does when its status is
// stored, and returns the labels of each condition's ragops_condition series, by type.
func conditionSeries(t *testing.T, kind, name string, conds ...metrics.Condition) map[string]map[string]string {
	t.Helper()
	metrics.SetConditions("search", kind, name, conds)
	out := map[string]map[string]string{}
	for _, c := range conds {
		l, v := exported(t, "ragops_condition", map[string]string{"namespace": "search", "kind": kind, "name": name, "type": c.Type})
		if v != 1 || l["status"] != c.Status || l["reason"] != c.Reason {
			t.Fatalf("%s %s condition %s: series %v = %v", kind, name, c.Type, l, v)
		}
		out[c.Type] = l
	}
	return out
}

// modelServerScraped returns the labels Prometheus stores for a series of a model server
// (ragops serve's own registry, serving/server.go: ragops_serve_rejected_total{reason},
// ragops_serve_request_duration_seconds{handler,code,method} from promhttp, which writes
// the method in lower case) scraped from its pod by a PodMonitor in its namespace.
func modelServerScraped(job string, series map[string]string) map[string]string {
	out := map[string]string{"namespace": "search", "pod": job + "-5c7d-abcde", "container": "serve",
		"endpoint": "http", "job": "search/" + job, "instance": "10.244.0.9:8080"}
	maps.Copy(out, series)
	return out
}

func input(labels map[string]string, values string) map[string]any {
	return map[string]any{"series": seriesSelector(labels), "values": values}
}

// fires returns an alert_rule_test entry: at evalTime alertname fires with exactly alerts.
func fires(evalTime, alertname string, alerts ...map[string]any) map[string]any {
	exp := []any{}
	for _, a := range alerts {
		exp = append(exp, a)
	}
	return map[string]any{"eval_time": evalTime, "alertname": alertname, "exp_alerts": exp}
}

func firing(labels map[string]string, summary, description, anchor string) map[string]any {
	l := map[string]string{"severity": "warning"}
	maps.Copy(l, labels)
	return map[string]any{"exp_labels": l, "exp_annotations": map[string]string{
		"summary": summary, "description": description,
		"runbook_url": "https://github.com/ragops/ragops/blob/main/docs/operations.md#" + anchor,
	}}
}

// operationsTests returns the promtool test groups of the ragops.operations alerts (chart
// rendered with for=10m, notReadyFor=30m and the default thresholds), each fed the series
// the manager exports after the controllers' calls, scraped through the chart's
// ServiceMonitor (honorLabels), and each alert checked firing and not firing.
func operationsTests(t *testing.T, honor bool) []any {
	t.Helper()
	scrape := func(l map[string]string) map[string]string { return scraped(l, honor) }
	cond := func(status, reason string) []metrics.Condition {
		return []metrics.Condition{{Type: "Ready", Status: status, Reason: reason}}
	}
	const (
		T = "True"
		F = "False"
	)

	// Index broken: Building for 20 minutes, then its build fails (Stalled=True).
	building := conditionSeries(t, "Index", "broken", metrics.Condition{Type: "Ready", Status: F, Reason: "Building"},
		metrics.Condition{Type: "Stalled", Status: F, Reason: "Building"})
	failed := conditionSeries(t, "Index", "broken", metrics.Condition{Type: "Ready", Status: F, Reason: "BuildFailed"},
		metrics.Condition{Type: "Stalled", Status: T, Reason: "BuildFailed"})
	fine := conditionSeries(t, "Index", "fine", metrics.Condition{Type: "Ready", Status: T, Reason: "Active"},
		metrics.Condition{Type: "Stalled", Status: F, Reason: "Active"},
		metrics.Condition{Type: "ServingReady", Status: T, Reason: "ModelServerReady"},
		metrics.Condition{Type: "UnderReplicated", Status: F, Reason: "ReplicasHealthy"})
	gated := conditionSeries(t, "Index", "gated", metrics.Condition{Type: "Ready", Status: F, Reason: "GateFailed"},
		metrics.Condition{Type: "Stalled", Status: T, Reason: "GateFailed"})
	paused := conditionSeries(t, "Index", "paused", metrics.Condition{Type: "Ready", Status: F, Reason: "Suspended"},
		metrics.Condition{Type: "Stalled", Status: T, Reason: "Suspended"})
	noServer := conditionSeries(t, "Index", "noserver", metrics.Condition{Type: "ServingReady", Status: F, Reason: "ModelServerNotReady"})
	thin := conditionSeries(t, "Index", "thin", metrics.Condition{Type: "UnderReplicated", Status: T, Reason: "ShardsUnderReplicated"})
	spent := conditionSeries(t, "Experiment", "spent", metrics.Condition{Type: "BudgetExhausted", Status: T, Reason: "BudgetExhausted"})
	within := conditionSeries(t, "Experiment", "within", metrics.Condition{Type: "BudgetExhausted", Status: F, Reason: "WithinBudget"})
	corpusOK := conditionSeries(t, "Corpus", "wetten", cond(T, "Synced")...)
	conditions := map[string]any{
		"interval": "1m",
		"input_series": []any{
			input(scrape(building["Ready"]), "1x20 stale"), input(scrape(building["Stalled"]), "1x20 stale"),
			input(scrape(failed["Ready"]), "_x20 1x40"), input(scrape(failed["Stalled"]), "_x20 1x40"),
			input(scrape(fine["Ready"]), "1x60"), input(scrape(fine["Stalled"]), "1x60"),
			input(scrape(fine["ServingReady"]), "1x60"), input(scrape(fine["UnderReplicated"]), "1x60"),
			input(scrape(gated["Ready"]), "1x60"), input(scrape(gated["Stalled"]), "1x60"),
			input(scrape(paused["Ready"]), "1x60"), input(scrape(paused["Stalled"]), "1x60"),
			input(scrape(noServer["ServingReady"]), "1x60"), input(scrape(thin["UnderReplicated"]), "1x60"),
			input(scrape(spent["BudgetExhausted"]), "1x60"), input(scrape(within["BudgetExhausted"]), "1x60"),
			input(scrape(corpusOK["Ready"]), "1x60"),
		},
		"alert_rule_test": []any{
			// Stalled=True for 10m (for), but not the gate's refusal nor a suspended Index.
			fires("25m", "RagopsStalled"),
			fires("31m", "RagopsStalled", firing(map[string]string{"namespace": "search", "kind": "Index", "name": "broken", "reason": "BuildFailed"},
				"Index broken is Stalled (BuildFailed)", "Index search/broken: Stalled=True, reason BuildFailed; kubectl describe names the field or the Job at fault.", "ragopsstalled")),
			// Not Ready for 30m, the clock kept across Building -> BuildFailed; not a gated or suspended Index.
			fires("25m", "RagopsIndexNotReady"),
			fires("31m", "RagopsIndexNotReady", firing(map[string]string{"namespace": "search", "name": "broken"},
				"Index broken is not Ready", "Index search/broken has not been Ready for 30m; kubectl describe index says why.", "ragopsindexnotready")),
			fires("5m", "RagopsGateRejected", firing(map[string]string{"namespace": "search", "name": "gated"},
				"The gate of Index gated rejected a revision", "Index search/gated: the candidate revision failed the gate; the alias stays on the active revision.", "ragopsgaterejected")),
			fires("5m", "RagopsModelServerUnavailable"),
			fires("11m", "RagopsModelServerUnavailable", firing(map[string]string{"namespace": "search", "name": "noserver"},
				"The model server of Index noserver is unavailable", "Index search/noserver: ServingReady=False; queries that embed their text fail.", "ragopsmodelserverunavailable")),
			fires("5m", "RagopsCollectionUnderReplicated"),
			fires("11m", "RagopsCollectionUnderReplicated", firing(map[string]string{"namespace": "search", "name": "thin"},
				"The collection of Index thin is under-replicated", "Index search/thin: shards of its active collection have fewer healthy replicas than its replication factor.", "ragopscollectionunderreplicated")),
			fires("2m", "RagopsExperimentBudgetExhausted", firing(map[string]string{"namespace": "search", "name": "spent", "reason": "BudgetExhausted"},
				"Experiment spent stopped: BudgetExhausted", "Experiment search/spent starts no more trials (BudgetExhausted).", "ragopsexperimentbudgetexhausted")),
		},
	}

	// Served content: Index stale is behind its Corpus since t=60s; Index current caught up
	// after 2h; Index fresh serves the listed revision throughout.
	metrics.SetServedCorpus("search", "stale", "c1", "c2", time.Unix(60, 0))
	staleL, staleV := exported(t, "ragops_index_served_corpus_behind_since_timestamp_seconds", map[string]string{"namespace": "search", "index": "stale"})
	metrics.SetServedCorpus("search", "current", "c1", "c2", time.Unix(60, 0))
	currentL, behindV := exported(t, "ragops_index_served_corpus_behind_since_timestamp_seconds", map[string]string{"namespace": "search", "index": "current"})
	metrics.SetServedCorpus("search", "current", "c2", "c2", time.Unix(7200, 0))
	_, caughtUpV := exported(t, "ragops_index_served_corpus_behind_since_timestamp_seconds", map[string]string{"namespace": "search", "index": "current"})
	metrics.SetServedCorpus("search", "fresh", "c2", "c2", time.Unix(60, 0))
	freshL, freshV := exported(t, "ragops_index_served_corpus_behind_since_timestamp_seconds", map[string]string{"namespace": "search", "index": "fresh"})
	stale := map[string]any{
		"interval": "10m",
		"input_series": []any{
			input(scrape(staleL), fmt.Sprintf("%gx60", staleV)),
			input(scrape(currentL), fmt.Sprintf("%gx11 %gx48", behindV, caughtUpV)),
			input(scrape(freshL), fmt.Sprintf("%gx60", freshV)),
		},
		"alert_rule_test": []any{
			fires("5h", "RagopsIndexServingStaleContent"),
			fires("7h", "RagopsIndexServingStaleContent", firing(map[string]string{"namespace": "search", "index": "stale"},
				"Index stale serves stale content", "Index search/stale serves a corpus revision older than its Corpus lists, for more than 21600 s.", "ragopsindexservingstalecontent")),
		},
	}

	// Failing builds: Index flaky's Jobs fail three times in three minutes; Index once failed
	// once. The manager exports both at 0 from their first reconcile (TrackIndex).
	metrics.TrackIndex("search", "flaky")
	metrics.TrackIndex("search", "once")
	flakyL, v0 := exported(t, "ragops_index_builds_total", map[string]string{"namespace": "search", "index": "flaky", "result": "failed"})
	flaky := []float64{v0}
	for i := range 3 {
		metrics.ObserveBuildFailure("search", "flaky", fmt.Sprintf("flaky-sync-%d", i))
		var v float64
		flakyL, v = exported(t, "ragops_index_builds_total", map[string]string{"namespace": "search", "index": "flaky", "result": "failed"})
		flaky = append(flaky, v)
	}
	_, once0 := exported(t, "ragops_index_builds_total", map[string]string{"namespace": "search", "index": "once", "result": "failed"})
	metrics.ObserveBuildFailure("search", "once", "once-build-1")
	onceL, onceV := exported(t, "ragops_index_builds_total", map[string]string{"namespace": "search", "index": "once", "result": "failed"})

	// Weaviate: every call fails for 20 minutes, then none does.
	metrics.ObserveWeaviateCall("SetAlias", errors.New("dial tcp 10.96.0.12:8080: connection refused"))
	callsL, _ := exported(t, "ragops_weaviate_requests_total", map[string]string{"operation": "SetAlias"})
	errorsL, _ := exported(t, "ragops_weaviate_request_errors_total", map[string]string{"operation": "SetAlias"})

	// controller-runtime's counter (pkg/internal/controller/metrics: label controller, the
	// controller's name), present at 0 from the controller's start.
	reconcileErr := func(controller string) map[string]string {
		return map[string]string{"__name__": "controller_runtime_reconcile_errors_total", "controller": controller}
	}

	// Model servers: busy answers 10 of its 100 embedding requests a minute with 429; calm none.
	rejected := func(job string) map[string]string {
		return modelServerScraped(job, map[string]string{"__name__": "ragops_serve_rejected_total", "reason": "queue_full"})
	}
	requests := func(job, code string) map[string]string {
		return modelServerScraped(job, map[string]string{"__name__": "ragops_serve_request_duration_seconds_count", "handler": "vectors", "code": code, "method": "post"})
	}
	manager := map[string]string{"namespace": "ragops-system", "job": "ragops-controller-manager-metrics-service"}
	counters := map[string]any{
		"interval": "1m",
		"input_series": []any{
			input(scrape(flakyL), fmt.Sprintf("%g %g %g %gx120", flaky[0], flaky[1], flaky[2], flaky[3])),
			input(scrape(onceL), fmt.Sprintf("%g %gx120", once0, onceV)),
			input(scrape(callsL), "1+10x40"),
			input(scrape(errorsL), "1+10x20 201x20"),
			input(scrape(reconcileErr("index")), "0+2x40"),
			input(scrape(reconcileErr("corpus")), "0x40"),
			input(rejected("busy"), "0+10x30"), input(requests("busy", "200"), "0+90x30"), input(requests("busy", "429"), "0+10x30"),
			input(rejected("calm"), "0x30"), input(requests("calm", "200"), "0+100x30"),
		},
		"alert_rule_test": []any{
			fires("10m", "RagopsIndexBuildsFailing", firing(map[string]string{"namespace": "search", "index": "flaky"},
				"Builds or syncs of Index flaky keep failing", "Index search/flaky: 3 or more build or sync Jobs failed in the last hour.", "ragopsindexbuildsfailing")),
			fires("2h", "RagopsIndexBuildsFailing"),
			fires("5m", "RagopsWeaviateUnreachable"),
			fires("15m", "RagopsWeaviateUnreachable", firing(manager,
				"The ragops manager cannot reach Weaviate", "More than 0.5 of the manager's Weaviate calls fail.", "ragopsweaviateunreachable")),
			fires("35m", "RagopsWeaviateUnreachable"),
			fires("10m", "RagopsReconcileErrors"),
			fires("20m", "RagopsReconcileErrors", firing(map[string]string{"namespace": "ragops-system", "job": "ragops-controller-manager-metrics-service", "controller": "index"},
				"The ragops index controller keeps failing to reconcile", "Controller index returned reconcile errors for 15m; the manager's log names the object and the error.", "ragopsreconcileerrors")),
			fires("5m", "RagopsModelServerShedding"),
			fires("20m", "RagopsModelServerShedding", firing(map[string]string{"namespace": "search", "job": "search/busy"},
				"Model server search/busy sheds queries", "Model server search/busy (namespace search) answers more than 0.05 of its embedding requests with 429 (queue full).", "ragopsmodelservershedding")),
		},
	}
	return []any{conditions, stale, counters}
}
