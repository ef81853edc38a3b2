package packaging

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragops/ragops/internal/metrics"
)

// The chart's PrometheusRule (prometheusRule.enabled) alerts on QualityDropped through a
// metric the manager registers, and is not rendered by default.
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
	if len(rules) != 1 {
		t.Fatalf("%d alert rules, want 1", len(rules))
	}
	rule := rules[0].(map[string]any)
	if rule["alert"] != "RagopsEvaluationQualityDropped" || rule["for"] != "10m" {
		t.Errorf("rule %v, want RagopsEvaluationQualityDropped for 10m", rule)
	}
	names := promqlMetricNames(rule["expr"].(string))
	if !slices.Equal(names, []string{"ragops_evaluation_quality_dropped"}) {
		t.Fatalf("the rule queries %v", names)
	}
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range metrics.Collectors() {
		c.Describe(ch)
	}
	close(ch)
	found := false
	for d := range ch {
		found = found || strings.Contains(d.String(), `fqName: "ragops_evaluation_quality_dropped"`)
	}
	if !found {
		t.Error("the manager registers no ragops_evaluation_quality_dropped")
	}
}
