package evaluate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/internal/plan"
)

// With the largest k list the API allows (8 cut-offs) and a span data set, the intervals
// (rounded to 4 decimals) of every measure fit the 4096-byte termination message; values
// that would not fit (unrounded here) keep those at k=10 only.
func TestIntervalsStayWithinTheTerminationMessage(t *testing.T) {
	for _, rounded := range []bool{true, false} {
		checkIntervalsFit(t, rounded)
	}
}

func checkIntervalsFit(t *testing.T, rounded bool) {
	iv := evaluator.MetricInterval{StdErr: 0.0234, Lo: 0.6081, Hi: 0.6999}
	if !rounded {
		iv = evaluator.MetricInterval{StdErr: 0.023412345678901, Lo: 0.60812345678901, Hi: 0.69992345678901}
	}
	sum := evaluator.Summary{Queries: 300, Metrics: map[string]float64{}, Intervals: map[string]evaluator.MetricInterval{},
		ResultsBytes: 27636, ResultsSHA256: strings.Repeat("ab", 32)}
	for _, k := range []int{1, 3, 5, 10, 20, 50, 100, 1000} {
		sum.Cutoffs = append(sum.Cutoffs, k)
		for _, m := range append(append([]string{}, "spanHit"), "recall", "ndcg", "mrr", "success", "map") {
			name := fmt.Sprintf("%s@%d", m, k)
			sum.Metrics[name] = 0.6543
			sum.Intervals[name] = iv
		}
	}
	res := ResultFromSummary(sum)
	raw, err := json.Marshal(res)
	if err != nil || len(raw) > plan.MaxTerminationMessage {
		t.Fatalf("%d bytes, %v", len(raw), err)
	}
	t.Logf("rounded=%v: %d bytes", rounded, len(raw))
	for _, m := range res.Metrics {
		if (m.K == metrics.DefaultK || rounded) != (len(m.Intervals) == 6) {
			t.Fatalf("rounded=%v k=%d: %d intervals", rounded, m.K, len(m.Intervals))
		}
	}
	if res.Metrics[3].Intervals["recall"] != (plan.MetricInterval(iv)) {
		t.Fatalf("recall@10 interval %+v", res.Metrics[3].Intervals["recall"])
	}
	if res.Results == nil || res.Results.Bytes != 27636 || res.Results.Queries != 300 {
		t.Fatalf("results ref %+v", res.Results)
	}
}

func TestResultsRefOfTheSummary(t *testing.T) {
	one := ResultFromSummary(evaluator.Summary{Cutoffs: []int{10}, Metrics: map[string]float64{"recall@10": 0.5},
		Intervals: map[string]evaluator.MetricInterval{"recall@10": {StdErr: 0.01, Lo: 0.48, Hi: 0.52}}})
	if len(one.Metrics) != 1 || one.Metrics[0].Intervals["recall"].Hi != 0.52 {
		t.Fatalf("%+v", one.Metrics)
	}
	over := ResultFromSummary(evaluator.Summary{Cutoffs: []int{10}, Queries: 20000, ResultsError: "results: 20000 queries take ..."})
	if over.Results == nil || over.Results.Error == "" || over.Results.Queries != 20000 {
		t.Fatalf("over the bound: %+v", over.Results)
	}
}

// The worker's log carries the per-query results file as a frame the controller reads back
// byte for byte; a file that is not the one the evaluation described is refused.
func TestEmitResultsFramesTheFile(t *testing.T) {
	blob, err := os.ReadFile(filepath.Join("..", "..", "evaluator", "results", "testdata", "scifact-bm25-w48.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, evaluator.ResultsFile), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	ref := &plan.ResultsRef{Queries: 300, Bytes: len(blob), SHA256: hex.EncodeToString(sum[:])}
	var log bytes.Buffer
	if got := EmitResults(&log, dir, ref); got != ref {
		t.Fatalf("ref %+v", got)
	}
	back, err := results.ReadFrame(&log, ref.SHA256)
	if err != nil || !bytes.Equal(back, blob) {
		t.Fatalf("read back %d bytes: %v", len(back), err)
	}
	stale := *ref
	stale.SHA256 = strings.Repeat("0", 64)
	log.Reset()
	if got := EmitResults(&log, dir, &stale); got.Error == "" || log.Len() != 0 || !strings.Contains(got.Error, "not the") {
		t.Fatalf("stale file: %+v, %d bytes logged", got, log.Len())
	}
}

func TestDatasetName(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.org/beir/scifact.tar.gz?x=1": "scifact",
		"/data/qmsum/":          "qmsum",
		"/datasets/legalqa.zip": "legalqa",
		"":                      "",
	} {
		if got := DatasetName(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
