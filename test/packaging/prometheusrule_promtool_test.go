package packaging

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/testenv"
)

// exportedSeries returns the ragops_evaluation_quality_dropped series the manager's metrics
// endpoint serves after the calls the Evaluation controller makes (internal/metrics), as
// "name{label="value",...}" with the labels each holds, by evaluation.
func exportedSeries(t *testing.T) map[string]map[string]string {
	t.Helper()
	metrics.SetQualityDropped("search", "nightly", "besluiten", true) // QualityDropped=True
	metrics.SetQualityDropped("search", "held", "besluiten", false)   // QualityDropped=False
	metrics.SetQualityDropped("search", "dropped-then-removed", "besluiten", true)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, mf := range mfs {
		if mf.GetName() != "ragops_evaluation_quality_dropped" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{"__name__": mf.GetName()}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["evaluation"]] = labels
		}
	}
	if len(out) != 3 {
		t.Fatalf("the manager exports %d quality_dropped series, want 3: %v", len(out), out)
	}
	return out
}

// scraped returns the labels Prometheus stores for an exported series scraped through the
// chart's ServiceMonitor: the target's labels (prometheus-operator sets namespace, service,
// pod, container, endpoint, job, instance) joined with the series', a clash resolved as the
// endpoint's honorLabels says (true: the series' label wins; false: it is kept as
// exported_<name>).
func scraped(exported map[string]string, honorLabels bool) map[string]string {
	out := map[string]string{"namespace": "ragops-system", "service": "ragops-controller-manager-metrics-service",
		"pod": "ragops-controller-manager-7d9c-x2x9z", "container": "manager", "endpoint": "http-metrics",
		"job": "ragops-controller-manager-metrics-service", "instance": "10.244.0.7:8443"}
	for k, v := range exported {
		if _, clash := out[k]; clash && !honorLabels {
			out["exported_"+k] = v
			continue
		}
		out[k] = v
	}
	return out
}

// seriesSelector writes labels as promtool's input series notation.
func seriesSelector(labels map[string]string) string {
	var names []string
	for k := range labels {
		if k != "__name__" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return labels["__name__"] + "{" + strings.Join(parts, ",") + "}"
}

// The chart's PrometheusRule, rendered as installed, passes `promtool check rules`, and
// `promtool test rules` over the series the manager exports, scraped through the chart's
// ServiceMonitor: an Evaluation whose QualityDropped is True fires
// RagopsEvaluationQualityDropped after `for` (10m), labelled with its own namespace,
// evaluation and index (not the manager's namespace); one whose condition is False does not;
// one whose series the manager removes (spec.alert removed, the Evaluation deleted) stops
// firing. Every alert of the ragops.operations group (docs/operations.md) is tested the same
// way, firing and not firing, over the series the manager exports after the controllers'
// calls (operationsTests).
func TestChartPrometheusRulePassesPromtool(t *testing.T) {
	promtool := testenv.Need(t, "RAGOPS_PROMTOOL", "run hack/prepare.d/promtool.sh (Debian's prometheus package)")
	var rule, monitor *unstructured.Unstructured
	for _, o := range helmTemplate(t, "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.for=10m", "--set", "prometheusRule.notReadyFor=30m", "--set", "serviceMonitor.enabled=true") {
		switch o.GetKind() {
		case "PrometheusRule":
			rule = o
		case "ServiceMonitor":
			monitor = o
		}
	}
	if rule == nil || monitor == nil {
		t.Fatal("the chart renders no PrometheusRule or no ServiceMonitor")
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	honor, _, _ := unstructured.NestedBool(endpoints[0].(map[string]any), "honorLabels")

	dir := t.TempDir()
	spec, _, _ := unstructured.NestedMap(rule.Object, "spec")
	rulesYAML, err := yaml.Marshal(spec) // spec.groups is a Prometheus rule file
	if err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "ragops-rules.yaml")
	if err := os.WriteFile(rulesFile, rulesYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	promtoolRun(t, promtool, dir, "check", "rules", rulesFile)

	series := exportedSeries(t)
	const runbook = "https://github.com/ragops/ragops/blob/main/docs/operations.md"
	labelsOf := func(ev string) map[string]string { return scraped(series[ev], honor) }
	alert := func(ev string) map[string]any {
		return map[string]any{
			"exp_labels": map[string]string{"namespace": "search", "evaluation": ev, "index": "besluiten", "severity": "warning"},
			"exp_annotations": map[string]string{
				"summary":     "Retrieval quality of Index besluiten dropped",
				"description": "Evaluation search/" + ev + ": its last run is worse than its baseline run by more than spec.alert.maxDrop (upper bound of the paired 95% interval below -maxDrop); kubectl describe evaluation names both runs.",
				"runbook_url": runbook + "#ragopsevaluationqualitydropped",
			},
		}
	}
	tests := map[string]any{
		"rule_files":          []string{filepath.Base(rulesFile)},
		"evaluation_interval": "1m",
		"tests": append([]any{map[string]any{
			"interval": "1m",
			"input_series": []any{
				map[string]any{"series": seriesSelector(labelsOf("nightly")), "values": "1x30"},
				map[string]any{"series": seriesSelector(labelsOf("held")), "values": "0x30"},
				// 1 for 12 minutes, then the manager removes the series.
				map[string]any{"series": seriesSelector(labelsOf("dropped-then-removed")), "values": "1x12 stale"},
			},
			"alert_rule_test": []any{
				map[string]any{"eval_time": "5m", "alertname": "RagopsEvaluationQualityDropped", "exp_alerts": []any{}},
				map[string]any{"eval_time": "11m", "alertname": "RagopsEvaluationQualityDropped", "exp_alerts": []any{alert("nightly"), alert("dropped-then-removed")}},
				map[string]any{"eval_time": "25m", "alertname": "RagopsEvaluationQualityDropped", "exp_alerts": []any{alert("nightly")}},
			},
		}}, operationsTests(t, honor)...),
	}
	testsYAML, err := yaml.Marshal(tests)
	if err != nil {
		t.Fatal(err)
	}
	testsFile := filepath.Join(dir, "ragops-rules-test.yaml")
	if err := os.WriteFile(testsFile, testsYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	promtoolRun(t, promtool, dir, "test", "rules", testsFile)
}

// promtoolRun runs promtool with args in dir and fails the test with its output on an error.
func promtoolRun(t *testing.T, promtool, dir string, args ...string) {
	t.Helper()
	c := exec.Command(promtool, args...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}
