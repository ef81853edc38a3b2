package cmd

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/evaluator/compare"
)

func runCompare(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"compare"}, args...))
	err := root.Execute()
	return out.String(), err
}

// `ragops compare --from-file` on two real SciFact runs, as text and JSON.
func TestCompareFromFiles(t *testing.T) {
	a := filepath.Join("..", "evaluator", "results", "testdata", "scifact-bm25-w48.json.gz")
	b := filepath.Join("..", "evaluator", "results", "testdata", "scifact-bm25-w200.json.gz")
	out, err := runCompare(t, "--from-file", a, b, "-o", "json", "--metric", "ndcg@10,recall@10", "--top", "3")
	if err != nil {
		t.Fatal(err)
	}
	var r compare.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Metrics) != 2 || r.Metrics[1].Name != "recall@10" || len(r.Changed) != 3 || r.A.Source != a || r.Queries != 300 {
		t.Fatalf("report %+v", r)
	}
	text, err := runCompare(t, "--from-file", b, a, "--top", "0")
	if err != nil || !strings.Contains(text, "ndcg@10") || strings.Contains(text, "changed most") {
		t.Fatalf("text (%v):\n%s", err, text)
	}
	if _, err := runCompare(t, "--from-file", a, b, "-o", "yaml"); err == nil {
		t.Fatal("-o yaml accepted")
	}
}
