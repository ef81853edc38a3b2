package monitoring

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// grafanaDashboard is the part of the shipped dashboard JSON the test reads.
type grafanaDashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

var labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// grafanaVariables returns Grafana's values of the dashboard's variables over [start, end] at
// step for a Prometheus scraping every scrape: the built-in $__interval (the step),
// $__rate_interval (max($__interval + scrape interval, 4 × scrape interval), Grafana's
// definition) and $__range, and each query variable answered from Prometheus
// (label_values(expr, label): the label's values of the series expr selects, earlier variables
// substituted), all selected, as Grafana writes a multi-value selection into a regex
// matcher: (a|b). It fails the test when a variable's query selects no series or does not
// offer the workload's namespace and Indexes.
func grafanaVariables(t *testing.T, d *demo, dash grafanaDashboard, start, end time.Time, step time.Duration) map[string]string {
	t.Helper()
	vars := map[string]string{
		"__interval":      promDuration(step),
		"__rate_interval": promDuration(max(step+d.scrapeInterval, 4*d.scrapeInterval)),
		"__range":         promDuration(end.Sub(start).Round(time.Second)),
	}
	wantValues := map[string][]string{"namespace": {d.ns}, "index": {staleIndex, stalledIndex}}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)["query"].(string)
		m := labelValuesQuery.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(expr, label)", v.Name, q)
		}
		var series []map[string]string
		d.api(t, "/api/v1/series", url.Values{"match[]": {substitute(m[1], vars)},
			"start": {unix(start)}, "end": {unix(end)}}, &series)
		var values []string
		for _, s := range series {
			if val, ok := s[m[2]]; ok && !slices.Contains(values, val) {
				values = append(values, val)
			}
		}
		slices.Sort(values)
		for _, w := range wantValues[v.Name] {
			if !slices.Contains(values, w) {
				t.Errorf("variable %s (%s) offers %v, not %s", v.Name, q, values, w)
			}
		}
		if len(values) == 0 {
			t.Fatalf("variable %s (%s) offers no value", v.Name, q)
		}
		if v.Name == "namespace" {
			values = []string{d.ns} // the user picks the workload's namespace
		}
		quoted := make([]string, len(values))
		for i, val := range values {
			quoted[i] = regexp.QuoteMeta(val)
		}
		vars[v.Name] = "(" + strings.Join(quoted, "|") + ")"
	}
	return vars
}

// substitute replaces $name and ${name} by vars[name], longest names first.
func substitute(expr string, vars map[string]string) string {
	names := keys(vars)
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, n := range names {
		expr = strings.ReplaceAll(expr, "${"+n+"}", vars[n])
		expr = strings.ReplaceAll(expr, "$"+n, vars[n])
	}
	return expr
}

func promDuration(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + "s" }

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64) }

// TestDashboardQueriesAnswered evaluates every query of the shipped Grafana dashboard
// (charts/ragops/dashboards/ragops.json) against the real Prometheus that scraped the
// manager and the model server through the demo workload (a build, a failed build, an
// Evaluation, model server query load, a corpus sync running), as Grafana would over the
// workload's time range: template variables answered from Prometheus and substituted, a
// range query per panel target. Every target must parse and return at least one series with
// at least one number (not only NaN, which Grafana shows as no data). The Model server row
// reads the model server's /metrics, every other panel the manager's; none reads a worker
// Job's.
func TestDashboardQueriesAnswered(t *testing.T) {
	d := demoWorkload(t)
	b, err := os.ReadFile(filepath.Join(root, "charts", "ragops", "dashboards", "ragops.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash grafanaDashboard
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	start, end, step := d.start, time.Now(), d.scrapeInterval
	vars := grafanaVariables(t, d, dash, start, end, step)
	t.Logf("variables: %v", vars)
	targets := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		for i, tg := range p.Targets {
			targets++
			expr := substitute(tg.Expr, vars)
			what := fmt.Sprintf("panel %q target %d: %s", p.Title, i, expr)
			if strings.Contains(expr, "$") {
				t.Errorf("%s: a variable is left", what)
				continue
			}
			var r queryResult
			if e := d.tryAPI("/api/v1/query_range", url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)},
				"step": {promDuration(step)}}, &r); e != nil {
				t.Errorf("%s: %s: %s", what, e.ErrorType, e.Error)
				continue
			}
			numbers := 0
			for _, s := range r.Result {
				for _, v := range s.Values {
					if !math.IsNaN(v.float()) {
						numbers++
					}
				}
			}
			if len(r.Result) == 0 || numbers == 0 {
				t.Errorf("%s: %d series, %d points with a number: the panel shows no data", what, len(r.Result), numbers)
				continue
			}
			t.Logf("%s: %d series, %d points", what, len(r.Result), numbers)
		}
	}
	if targets < 10 {
		t.Fatalf("the dashboard has %d panel queries", targets)
	}
}
