package evaluator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragops/ragops/evaluator/internal/datasets"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
)

var updateResults = flag.Bool("update-results", false, "rewrite evaluator/results/testdata from two real SciFact BM25 runs")

// The per-query results of two real runs (SciFact test, 300 queries, BM25 over 48-word and
// 200-word chunks of the in-memory index) are committed as fixtures of the statistics
// parity test and of `ragops compare`; this test checks Run still produces them
// (go test ./evaluator -run TestPerQueryResults -update-results rewrites them).
func TestPerQueryResultsOfTwoRealRuns(t *testing.T) {
	ds, ix48 := sciFact(t)
	dir := datasets.Dir(t, "scifact")
	for _, words := range []int{48, 200} {
		ix := ix48
		if words != 48 {
			ix = newMemIndex(ds.Corpus, words)
		}
		out := t.TempDir()
		cfg := Config{
			Dataset: DatasetSource{Name: "scifact", Dir: dir}, Mode: BM25, Retriever: ix, OutDir: out,
			Origin: results.Origin{Namespace: "default", Evaluation: fmt.Sprintf("scifact-bm25-w%d", words), UID: fmt.Sprintf("uid-w%d", words), Revision: fmt.Sprintf("w%d", words)},
		}
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := os.ReadFile(filepath.Join(out, ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(blob)
		if sum.ResultsBytes != len(blob) || sum.ResultsSHA256 != hex.EncodeToString(h[:]) || sum.ResultsError != "" {
			t.Fatalf("summary describes %d bytes %s (%q), file is %d bytes %x", sum.ResultsBytes, sum.ResultsSHA256, sum.ResultsError, len(blob), h)
		}
		set, err := results.Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Queries) != sum.Queries || set.Dataset != "scifact" || set.Split != "test" || set.Evaluation != cfg.Origin.Evaluation || len(set.Fingerprint) != 64 {
			t.Fatalf("set: %d queries (summary %d), %q/%q, %q, fingerprint %q", len(set.Queries), sum.Queries, set.Dataset, set.Split, set.Evaluation, set.Fingerprint)
		}
		// Each column's mean is the summary's metric, and its interval is the bootstrap of
		// the column seeded from the UID.
		for _, name := range set.Metrics {
			_, v, err := set.Column(name)
			if err != nil {
				t.Fatal(err)
			}
			iv, err := stats.OfMetric(v, cfg.Origin.UID, name)
			if err != nil {
				t.Fatal(err)
			}
			iv = iv.Rounded()
			if got := sum.Intervals[name]; got != (MetricInterval{StdErr: iv.StdErr, Lo: iv.Lo, Hi: iv.Hi}) || got.StdErr <= 0 || got.Lo >= got.Hi {
				t.Fatalf("%s: summary interval %+v, bootstrap of the column %+v", name, got, iv)
			}
			mean := 0.0
			for _, x := range v {
				mean += x
			}
			if got := Round4(mean / float64(len(v))); got != sum.Metrics[name] {
				t.Fatalf("%s: mean of the column %.4f, summary %.4f", name, got, sum.Metrics[name])
			}
		}
		// The first relevant rank agrees with success@10 and MRR@10 of each query; the top
		// documents are the run file's.
		run := readRunFile(t, filepath.Join(out, RunFile))
		_, success, _ := set.Column(metrics.Name(metrics.Success, 10))
		_, mrr, _ := set.Column(metrics.Name(metrics.MRR, 10))
		for i, q := range set.Queries {
			in10 := q.FirstRelevant >= 1 && q.FirstRelevant <= 10
			if in10 != (success[i] == 1) || (in10 && mrr[i] != results.Round6(1/float64(q.FirstRelevant))) {
				t.Fatalf("query %s: first relevant rank %d, success@10 %v, mrr@10 %v", q.ID, q.FirstRelevant, success[i], mrr[i])
			}
			top := run[q.ID][:min(len(run[q.ID]), results.DocsKept)]
			if fmt.Sprint(top) != fmt.Sprint(q.Docs) {
				t.Fatalf("query %s: docs %v, run file %v", q.ID, q.Docs, top)
			}
			if q.Text == "" {
				t.Fatalf("query %s has no text", q.ID)
			}
		}
		fixture := filepath.Join("results", "testdata", fmt.Sprintf("scifact-bm25-w%d.json.gz", words))
		if *updateResults {
			if err := os.WriteFile(fixture, blob, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		committed, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatal(err)
		}
		old, err := results.Decode(committed)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := old.Encode()
		b, _ := set.Encode()
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs from what Run writes now (rerun with -update-results if the change is intended)", fixture)
		}
	}
}

// Each scheduled run draws its own bootstrap resamples: the intervals are seeded from the
// Evaluation's UID and the run's slot (Origin.Run), which the per-query results record, so
// the same run reproduces its intervals and another run of the same values does not repeat
// them; a run without a slot keeps the UID's seed.
func TestScheduledRunsSeedTheirIntervalsWithTheirSlot(t *testing.T) {
	_, ix := sciFact(t)
	dir := datasets.Dir(t, "scifact")
	run := func(slot string) (Summary, *results.Set) {
		t.Helper()
		out := t.TempDir()
		sum, err := Run(context.Background(), Config{Dataset: DatasetSource{Name: "scifact", Dir: dir}, Mode: BM25, Retriever: ix, OutDir: out, MaxQueries: 60,
			Origin: results.Origin{Namespace: "default", Evaluation: "nightly", UID: "uid-nightly", Run: slot}})
		if err != nil {
			t.Fatal(err)
		}
		blob, err := os.ReadFile(filepath.Join(out, ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		set, err := results.Decode(blob)
		if err != nil {
			t.Fatal(err)
		}
		return sum, set
	}
	const one, two = "2026-12-07T01:00:00Z", "2026-12-07T02:00:00Z"
	a, setA := run(one)
	again, _ := run(one)
	b, _ := run(two)
	plain, _ := run("")
	if setA.Run != one {
		t.Errorf("the results record run %q, want %q", setA.Run, one)
	}
	if a.Intervals["recall@10"] != again.Intervals["recall@10"] {
		t.Errorf("the same run gave %+v and %+v", a.Intervals["recall@10"], again.Intervals["recall@10"])
	}
	differs := 0
	for name, iv := range a.Intervals {
		if b.Intervals[name] != iv {
			differs++
		}
		if a.Metrics[name] != b.Metrics[name] {
			t.Errorf("%s: means %v and %v of the same values", name, a.Metrics[name], b.Metrics[name])
		}
	}
	if differs == 0 {
		t.Errorf("runs %s and %s drew the same resamples: every interval equal", one, two)
	}
	_, v, err := setA.Column("recall@10")
	if err != nil {
		t.Fatal(err)
	}
	iv, err := stats.OfMetric(v, "uid-nightly", "recall@10")
	if err != nil {
		t.Fatal(err)
	}
	if iv = iv.Rounded(); plain.Intervals["recall@10"] != (MetricInterval{StdErr: iv.StdErr, Lo: iv.Lo, Hi: iv.Hi}) {
		t.Errorf("a run without a slot: %+v, want the UID's seed %+v", plain.Intervals["recall@10"], iv)
	}
}
