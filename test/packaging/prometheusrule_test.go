package packaging

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragops/ragops/internal/metrics"
)

// The chart's PrometheusRule (prometheusRule.enabled) alerts on QualityDropped and on what
// else docs/operations.md lists, each with a runbook_url, through metrics the manager
// registers (controller-runtime's controller_runtime_* beside them; ragops_serve_* are the
// model server's own), and is not rendered by default.
func TestChartPrometheusRuleAlertsOnAnExportedMetric(t *testing.T) {
	for _, o := range helmTemplate(t) {
		if o.GetKind() == "PrometheusRule" {
			t.Fatalf("PrometheusRule %s rendered by default", o.GetName())
		}
	}
	var rules []any
	for _, o := range helmTemplate(t, "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.for=10m") {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _ := o.Object["spec"].(map[string]any)["groups"].([]any)
		for _, g := range groups {
			rules = append(rules, g.(map[string]any)["rules"].([]any)...)
		}
	}
	registered := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range metrics.Collectors() {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		s := d.String()
		i := strings.Index(s, `fqName: "`) + len(`fqName: "`)
		registered[s[i:i+strings.Index(s[i:], `"`)]] = true
	}
	var alerts []string
	for _, r := range rules {
		rule := r.(map[string]any)
		name, _ := rule["alert"].(string)
		alerts = append(alerts, name)
		if name == "RagopsEvaluationQualityDropped" && rule["for"] != "10m" {
			t.Errorf("rule %v, want RagopsEvaluationQualityDropped for 10m", rule)
		}
		if ann, _ := rule["annotations"].(map[string]any); !strings.HasPrefix(fmt.Sprint(ann["runbook_url"]), "https://github.com/ragops/ragops/blob/main/docs/operations.md#"+strings.ToLower(name)) {
			t.Errorf("%s: runbook_url %v, want docs/operations.md#%s", name, ann["runbook_url"], strings.ToLower(name))
		}
		for _, m := range promqlMetricNames(rule["expr"].(string)) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_count"), "_sum"), "_bucket")
			if !registered[m] && !registered[base] && !strings.HasPrefix(m, "controller_runtime_") && !strings.HasPrefix(m, "ragops_serve_") {
				t.Errorf("%s queries %s, which the manager does not register", name, m)
			}
		}
	}
	want := []string{"RagopsEvaluationQualityDropped", "RagopsIndexServingStaleContent", "RagopsStalled", "RagopsIndexBuildsFailing",
		"RagopsIndexNotReady", "RagopsGateRejected", "RagopsModelServerUnavailable", "RagopsModelServerShedding",
		"RagopsWeaviateUnreachable", "RagopsCollectionUnderReplicated", "RagopsExperimentBudgetExhausted", "RagopsReconcileErrors"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}
