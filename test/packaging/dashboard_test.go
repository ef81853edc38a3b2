package packaging

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// The Grafana dashboard (config/grafana/ragops-dashboard.json, the same file as the chart's
// dashboards/ragops.json): its layout, and that every metric its queries name is one the
// manager exports (TestLeastPrivilegeFullReconcileAndMetrics scrapes a running manager and
// calls assertDashboardMetricsExported).

// dashboardPanel is the part of a Grafana panel the tests read.
type dashboardPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type dashboard struct {
	Title      string           `json:"title"`
	UID        string           `json:"uid"`
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(repoPath("config", "grafana", "ragops-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("config/grafana/ragops-dashboard.json: %v", err)
	}
	return d
}

// dashboardQueries returns every PromQL expression of the dashboard: the panels' targets and
// the inner expression of the variables' label_values(expr, label) queries.
func dashboardQueries(t *testing.T, d dashboard) []string {
	t.Helper()
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(expr, label)", v.Name, q)
		}
		out = append(out, m[1])
	}
	return out
}

var (
	promString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless", "atan2", "inf", "nan"}
)

// promqlMetricNames returns the metric names a PromQL expression selects, sorted and unique:
// the identifiers left after removing string literals, label matchers, range and subquery
// brackets and grouping clauses that are neither a function or aggregation (followed by "(")
// nor a keyword. (The PromQL parser, github.com/prometheus/prometheus/promql/parser, would
// pull the Prometheus server's dependencies into the operator's module.)
func promqlMetricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, m := range promIdent.FindAllStringSubmatchIndex(s, -1) {
		id := s[m[2]:m[3]]
		rest := strings.TrimLeft(s[m[3]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(promKeywords, strings.ToLower(id)) {
			continue
		}
		if !slices.Contains(names, id) {
			names = append(names, id)
		}
	}
	sort.Strings(names)
	return names
}

func TestPromQLMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (namespace, index) (rate(ragops_index_tokens_embedded_total{namespace=~"$namespace", index=~"a|b(c)"}[$__rate_interval]))`:    {"ragops_index_tokens_embedded_total"},
		`histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket{controller=~"index"}[5m])))`: {"controller_runtime_reconcile_time_seconds_bucket"},
		`sum(a_total{x="1"}) / ignoring(state) sum(b) > bool 0.5 or on() vector(1) offset 1h`:                                                 {"a_total", "b"},
		`time() - max without (evaluation) (ragops_evaluation_last_completion_timestamp_seconds)`:                                             {"ragops_evaluation_last_completion_timestamp_seconds"},
		`1e3 * up`: {"up"},
	} {
		if got := promqlMetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("promqlMetricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}

// TestDashboardLayout checks the dashboard as Grafana lays it out: the chart's copy is the
// same file, panel ids are unique, panels fit the 24-column grid without overlapping, every
// panel has a query, and the panels the issue asks for are there.
func TestDashboardLayout(t *testing.T) {
	a, err := os.ReadFile(repoPath("config", "grafana", "ragops-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(repoPath(chartDir, "dashboards", "ragops.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Error("charts/ragops/dashboards/ragops.json differs from config/grafana/ragops-dashboard.json")
	}
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q", d.UID, d.Title)
	}
	ids := map[int]bool{}
	type rect struct{ x0, y0, x1, y1 int }
	var rects []rect
	var titles []string
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q gridPos %+v is outside the 24-column grid", p.Title, g)
		}
		r := rect{g.X, g.Y, g.X + g.W, g.Y + g.H}
		for _, o := range rects {
			if r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1 {
				t.Errorf("panel %q at %+v overlaps another at %+v", p.Title, r, o)
			}
		}
		rects = append(rects, r)
		if p.Type == "row" {
			continue
		}
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 || slices.ContainsFunc(p.Targets, func(tg struct {
			Expr string `json:"expr"`
		}) bool {
			return strings.TrimSpace(tg.Expr) == ""
		}) {
			t.Errorf("panel %q has a target without a query", p.Title)
		}
	}
	// The panels, by the metric each must query.
	queried := map[string]bool{}
	for _, q := range dashboardQueries(t, d) {
		for _, n := range promqlMetricNames(q) {
			queried[n] = true
		}
	}
	for what, metric := range map[string]string{
		"builds running":                 "ragops_index_builds_running",
		"builds failed":                  "ragops_index_builds_total",
		"tokens/s per Index":             "ragops_index_tokens_embedded_total",
		"documents done/total":           "ragops_index_build_documents",
		"reconcile latency":              "controller_runtime_reconcile_time_seconds_bucket",
		"reconcile errors":               "controller_runtime_reconcile_errors_total",
		"Evaluation recall@10 per Index": "ragops_evaluation_recall",
		"Weaviate errors":                "ragops_weaviate_request_errors_total",
	} {
		if !queried[metric] {
			t.Errorf("no panel shows %s (%s)", what, metric)
		}
	}
	t.Logf("%d panels: %s", len(titles), strings.Join(titles, "; "))
}

// assertDashboardMetricsExported checks that every metric the dashboard's queries name is a
// family in at least one of the scrapes of a running manager (a histogram's _bucket, _sum and
// _count series belong to its family), except the model server's own ragops_serve_* (the
// Model server row; test/monitoring scrapes a real `ragops serve` for them).
func assertDashboardMetricsExported(t *testing.T, scrapes ...map[string]*dto.MetricFamily) {
	t.Helper()
	exported := func(name string) bool {
		for _, mfs := range scrapes {
			if _, ok := mfs[name]; ok {
				return true
			}
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok {
					if mf, ok := mfs[base]; ok && (mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY) {
						return true
					}
				}
			}
		}
		return false
	}
	var names []string
	for _, q := range dashboardQueries(t, readDashboard(t)) {
		for _, n := range promqlMetricNames(q) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) < 8 {
		t.Fatalf("the dashboard's queries name %d metrics: %v", len(names), names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "ragops_serve_") {
			continue
		}
		if !exported(n) {
			t.Errorf("the dashboard queries %s, which the manager does not export", n)
		}
	}
	t.Logf("dashboard metrics exported by the manager: %s", strings.Join(names, ", "))
}
