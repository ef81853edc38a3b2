package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runReport runs `ragops report args...` and returns its standard output.
func runReport(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"report"}, args...))
	err := root.Execute()
	return out.String(), err
}

// TestReportFromFile renders the SciFact Evaluations of docs/results.md from a kubectl List file: the
// format comes from the extension or --format, a picture is written with the table printed
// beside it, objects of other namespaces are left out, and --index charts revisions.
func TestReportFromFile(t *testing.T) {
	from := filepath.Join("..", "report", "testdata", "scifact-evaluations.yaml")
	dir := t.TempDir()

	out, err := runReport(t, "--from", from, "-n", "ragops-demo", "-o", filepath.Join(dir, "q.png"))
	if err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "q.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("q.png: %v, %d bytes", err, len(png))
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 14 || !strings.HasPrefix(lines[2], "| Dense | recursive-128 | 0.8216 |") {
		t.Errorf("printed table (%d lines, want header, rule and 12 rows):\n%s", len(lines), out)
	}

	md, err := runReport(t, "--from", from, "-n", "ragops-demo", "--format", "markdown", "-o", "-")
	if err != nil || md != out {
		t.Errorf("--format markdown -o - (err %v) differs from the table printed beside the picture:\n%s", err, md)
	}
	if _, err := runReport(t, "--from", from, "-n", "elsewhere", "-o", filepath.Join(dir, "e.svg")); err == nil || !strings.Contains(err.Error(), "no Evaluation") {
		t.Errorf("another namespace: err %v, want no Evaluation", err)
	}
	if _, err := runReport(t, "--from", from, "-n", "ragops-demo", "-o", filepath.Join(dir, "x.gif")); err == nil || !strings.Contains(err.Error(), "svg, png, markdown") {
		t.Errorf("unknown extension: err %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.gif")); !os.IsNotExist(err) {
		t.Errorf("a failed report left x.gif behind (stat: %v)", err)
	}
	if _, err := runReport(t, "--from", from, "-n", "ragops-demo", "--index", "missing", "-o", "-"); err == nil || !strings.Contains(err.Error(), "Index ragops-demo/missing not found") {
		t.Errorf("--index of a missing Index: err %v", err)
	}

	list := filepath.Join(dir, "rollout.yaml")
	if err := os.WriteFile(list, []byte(rolloutList), 0o644); err != nil {
		t.Fatal(err)
	}
	rev, err := runReport(t, "--from", list, "-n", "rag", "--index", "besluiten", "--format", "markdown", "-o", "-")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(rev), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "| r1 | 2026-11-01T00:00:00Z | Ready | 0.7000 | - |") ||
		!strings.HasPrefix(lines[3], "| r2 | 2026-11-02T00:00:00Z | Active | - | 0.8100 |") {
		t.Errorf("--index table, want r1 (Dense 0.7) then r2 (gate 0.81):\n%s", rev)
	}
}

// rolloutList is an Index with two revisions and an Evaluation of the older one, as
// kubectl get indexes,evaluations -o yaml prints them.
const rolloutList = `apiVersion: v1
kind: List
items:
  - apiVersion: ragops.dev/v1alpha1
    kind: Index
    metadata: {name: besluiten, namespace: rag}
    spec: {corpusRef: {name: c}, strategyRef: {name: s}}
    status:
      activeRevision: r2
      revisions:
        - {name: r2, phase: Active, collection: c2, creationTime: "2026-11-02T00:00:00Z", gateRecall: 0.81}
        - {name: r1, phase: Ready, collection: c1, creationTime: "2026-11-01T00:00:00Z"}
  - apiVersion: ragops.dev/v1alpha1
    kind: Evaluation
    metadata: {name: e1, namespace: rag}
    spec: {indexRef: {name: besluiten}, mode: Dense}
    status: {revision: r1, recallAt10: 0.7, ndcgAt10: 0.6}
`

// TestReportExperimentFromFile reads the report package's Experiment fixture, as the object
// and inside a List: the chart is written (default NAME-pareto.svg, one marker per
// candidate) with the leaderboard printed beside it, the same table as --format markdown;
// --cost storage changes the Pareto column; a missing Experiment, an unknown cost and
// --index with --experiment are refused.
func TestReportExperimentFromFile(t *testing.T) {
	from, err := filepath.Abs(filepath.Join("..", "report", "testdata", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)

	out, err := runReport(t, "--experiment", "grid", "-f", from, "-n", "ragops-demo")
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile("grid-pareto.svg")
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("grid-pareto.svg: %v, %d bytes", err, len(svg))
	}
	// Squares of the candidates (7, one per leaderboard entry) and of the legend (2) are
	// the only filled paths in the chart's orange and blue.
	if n := bytes.Count(svg, []byte("fill:#FF7F0E")) + bytes.Count(svg, []byte("fill:#1F77B4")); n != 7+2 {
		t.Errorf("%d orange or blue squares, want 7 candidates and 2 in the legend", n)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2+7 || !strings.HasPrefix(lines[0], "| rank | trial | retrieval | parameters | recall@10 [95% interval] |") ||
		!strings.HasPrefix(lines[2], "| 1 | recursive-512 | dense |") || !strings.HasSuffix(lines[2], "| tied for best with 2; winner | yes |") ||
		!strings.Contains(lines[3], "| tied with best, p 0.620 | no |") {
		t.Errorf("printed leaderboard (%d lines, want header, rule and 7 rows):\n%s", len(lines), out)
	}
	md, err := runReport(t, "--experiment", "grid", "--from", from, "-n", "ragops-demo", "-o", "-")
	if err != nil || md != out {
		t.Errorf("-o - (err %v) differs from the table printed beside the chart:\n%s", err, md)
	}
	st, err := runReport(t, "--experiment", "grid", "-f", from, "-n", "ragops-demo", "--cost", "storage", "-o", "-")
	if err != nil || !strings.Contains(st, "Pareto front (storage)") || !strings.HasSuffix(strings.TrimSpace(st), "| - |") {
		t.Errorf("--cost storage (err %v): want the storage column and the unmeasured last entry off the front:\n%s", err, st)
	}

	fixture, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var indented strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(fixture)), "\n") {
		if !strings.HasPrefix(l, "#") {
			indented.WriteString("    " + l + "\n")
		}
	}
	list := "apiVersion: v1\nkind: List\nitems:\n" + rolloutList[strings.Index(rolloutList, "  - apiVersion"):] + "  -\n" + indented.String()
	if err := os.WriteFile("list.yaml", []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	fromList, err := runReport(t, "--experiment", "grid", "-f", "list.yaml", "-n", "ragops-demo", "-o", "-")
	if err != nil || fromList != md {
		t.Errorf("from a List (err %v), want the same table:\n%s", err, fromList)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--experiment", "grid", "-n", "elsewhere"}, "Experiment elsewhere/grid not found"},
		{[]string{"--experiment", "other", "-n", "ragops-demo"}, "Experiment ragops-demo/other not found"},
		{[]string{"--experiment", "grid", "-n", "ragops-demo", "--cost", "dollars"}, `--cost "dollars"`},
		{[]string{"--experiment", "grid", "-n", "ragops-demo", "--index", "x"}, "--experiment and --index"},
	} {
		if _, err := runReport(t, append(c.args, "-f", from, "-o", "x.svg")...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat("x.svg"); !os.IsNotExist(err) {
		t.Errorf("a refused report left x.svg behind (stat: %v)", err)
	}
}
