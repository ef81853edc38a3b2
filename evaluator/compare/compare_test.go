package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
)

func fixtures(t *testing.T) (*results.Set, *results.Set, string, string) {
	t.Helper()
	pa := filepath.Join("..", "results", "testdata", "scifact-bm25-w48.json.gz")
	pb := filepath.Join("..", "results", "testdata", "scifact-bm25-w200.json.gz")
	a, err := LoadFile(pa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	return a, b, pa, pb
}

// Two real SciFact BM25 runs (48-word and 200-word chunks, 300 queries): per metric the
// means, the paired interval and p-value, the counts; then the queries that changed most.
func TestCompareTwoRealRuns(t *testing.T) {
	a, b, pa, pb := fixtures(t)
	r, err := Compare(a, b, pa, pb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Queries != 300 || r.Dataset != "scifact" || r.Primary != "ndcg@10" || len(r.Metrics) != 5 || r.Resamples != 10000 || r.Flips != 10000 {
		t.Fatalf("report %+v", r)
	}
	for _, m := range r.Metrics {
		_, va, _ := a.Column(m.Name)
		_, vb, _ := b.Column(m.Name)
		d, _ := stats.Differences(vb, va)
		if math.Abs(m.Diff.Mean-(m.B-m.A)) > 1e-12 || math.Abs(m.Diff.Mean-stats.Mean(d)) > 1e-12 {
			t.Fatalf("%s: diff %v, B−A %v", m.Name, m.Diff.Mean, m.B-m.A)
		}
		better := 0
		for _, x := range d {
			if x > 0 {
				better++
			}
		}
		if m.Better != better || m.Better+m.Worse+m.Tied != 300 {
			t.Fatalf("%s: %d/%d/%d, want %d better of 300", m.Name, m.Better, m.Worse, m.Tied, better)
		}
		if !(m.Diff.Lo <= m.Diff.Mean && m.Diff.Mean <= m.Diff.Hi) || m.P <= 0 || m.P > 1 {
			t.Fatalf("%s: %+v", m.Name, m.Paired)
		}
		// The bootstrap interval and the randomization test agree on significance here
		// (Smucker et al. 2007): an interval that excludes 0 goes with p < 0.05.
		if excludes := m.Diff.Lo > 0 || m.Diff.Hi < 0; excludes != m.Significant {
			t.Errorf("%s: interval [%v, %v] but p = %v", m.Name, m.Diff.Lo, m.Diff.Hi, m.P)
		}
		t.Logf("%s: A %.4f B %.4f diff %s p=%.4f better/worse/tied %d/%d/%d", m.Name, m.A, m.B, stats.FormatDiff(m.Diff), m.P, m.Better, m.Worse, m.Tied)
	}
	// Changed queries: sorted by |Δ nDCG@10|, each with the ranks of the two runs.
	if len(r.Changed) != 10 {
		t.Fatalf("%d changed queries", len(r.Changed))
	}
	for i, c := range r.Changed {
		if i > 0 && math.Abs(c.Delta) > math.Abs(r.Changed[i-1].Delta) {
			t.Fatalf("changed queries not ordered by |Δ|: %+v", r.Changed)
		}
		qa, qb := find(a, c.ID), find(b, c.ID)
		if c.RankA != qa.FirstRelevant || c.RankB != qb.FirstRelevant || c.Text != qa.Text || c.Text == "" {
			t.Fatalf("change %+v, A %+v B %+v", c, qa, qb)
		}
	}
	// Same inputs, same figures (seeded from the runs).
	again, _ := Compare(a, b, pa, pb, Options{})
	if again.Metrics[0].Paired != r.Metrics[0].Paired {
		t.Fatal("a second comparison differs")
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	for _, want := range []string{"data set scifact/test, 300 queries", "ndcg@10", "GOLD RANK A → B", r.Changed[0].ID} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	raw, _ := json.Marshal(r)
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil || back.Metrics[1].P != r.Metrics[1].P || back.Metrics[1].Diff.Hi != r.Metrics[1].Diff.Hi {
		t.Fatalf("JSON does not round-trip: %v", err)
	}
}

func find(s *results.Set, id string) results.Query {
	for _, q := range s.Queries {
		if q.ID == id {
			return q
		}
	}
	return results.Query{}
}

func TestDifferentQueriesAreRefused(t *testing.T) {
	a, b, pa, pb := fixtures(t)
	other := *b
	other.Dataset = "qmsum"
	if _, err := Compare(a, &other, pa, pb, Options{}); !errors.Is(err, ErrDifferentQueries) || !strings.Contains(err.Error(), "A is data set scifact/test, B is qmsum/test") {
		t.Fatalf("other data set: %v", err)
	}
	fewer := *b
	fewer.Queries = b.Queries[:35]
	fewer.Fingerprint = strings.Repeat("f", 64)
	if _, err := Compare(a, &fewer, pa, pb, Options{}); !errors.Is(err, ErrDifferentQueries) || !strings.Contains(err.Error(), "300 and 35 queries") {
		t.Fatalf("other queries: %v", err)
	}
	if _, err := Compare(a, b, pa, pb, Options{Metrics: []string{"spanHit@10"}}); err == nil || !strings.Contains(err.Error(), "no query has annotated spans") {
		t.Fatalf("missing metric: %v", err)
	}
}
