package stats_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
)

// referencePath returns the scipy reference file written by hack/stats-reference/run.sh
// (hack/prepare.d/stats-reference.sh points RAGOPS_STATS_REFERENCE at it); without it the
// test skips, and fails under RAGOPS_REQUIRE_ALL=1.
func referencePath(t *testing.T) string {
	p := os.Getenv("RAGOPS_STATS_REFERENCE")
	if p == "" {
		msg := "RAGOPS_STATS_REFERENCE is not set (hack/prepare.d/stats-reference.sh computes the scipy reference)"
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

type refKey struct{ n, metric, amount string }

func readReference(t *testing.T, path string) (map[refKey]float64, []string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (hack/stats-reference/run.sh writes it)", err)
	}
	defer f.Close()
	ref := map[refKey]float64{}
	var notes []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			notes = append(notes, sc.Text())
			continue
		}
		fs := strings.Split(sc.Text(), "\t")
		v, err := strconv.ParseFloat(fs[len(fs)-1], 64)
		if len(fs) != 4 || err != nil {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		ref[refKey{fs[0], fs[1], fs[2]}] = v
	}
	return ref, notes
}

// subsetOf returns the first n values of both ("300"), or the first n queries where they
// differ ("12nz"), as reference.py selects them.
func subsetOf(cand, base []float64, subset string) (x, y []float64) {
	if k, ok := strings.CutSuffix(subset, "nz"); ok {
		n, _ := strconv.Atoi(k)
		for i := range cand {
			if cand[i] != base[i] && len(x) < n {
				x, y = append(x, cand[i]), append(y, base[i])
			}
		}
		return x, y
	}
	n, _ := strconv.Atoi(subset)
	return cand[:n], base[:n]
}

func column(t *testing.T, name, metric string) []float64 {
	b, err := os.ReadFile(filepath.Join("..", "results", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := results.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := s.Column(metric)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestParityWithScipy compares the intervals, standard errors and p-values with
// scipy.stats.bootstrap (method="percentile") and scipy.stats.permutation_test
// (permutation_type="samples") on the per-query values of two real SciFact runs: the first
// 300 and 35 queries, and the first 12 whose values differ ("12nz"). Both sides draw B = 10,000 resamples from independent generators, so they
// agree within Monte-Carlo error, and the tolerances are 4 standard deviations of the
// difference of two independent estimates:
//   - interval bounds: the 2.5% quantile of B near-normal resampled means has a standard
//     error of √(0.025·0.975/B)/φ(1.96) = 0.0267 bootstrap standard errors (SE); two
//     estimates differ by 0.0378 SE, so 0.16 SE, plus the spacing of the values a mean
//     of n queries can take where it is discrete (1/n of the value range at n ≤ 35);
//   - the standard error: its relative error is 1/√(2B) = 0.71%, two differ by 1%: 4%;
//   - the p-value: √(2p(1−p)/B), times 4, plus 2/(B+1) for scipy's doubling of the
//     smaller one-sided p-value; at 12 queries both enumerate all 4096 sign assignments,
//     and the p-values must be equal (1e-12).
func TestParityWithScipy(t *testing.T) {
	ref, notes := readReference(t, referencePath(t))
	for _, n := range notes {
		t.Log(n)
	}
	const B = 10000
	checked := 0
	for _, metric := range []string{"ndcg@10", "recall@10", "mrr@10"} {
		base, cand := column(t, "scifact-bm25-w48.json.gz", metric), column(t, "scifact-bm25-w200.json.gz", metric)
		for _, subset := range []string{"300", "35", "12nz"} {
			x, y := subsetOf(cand, base, subset)
			n := len(x)
			get := func(q string) float64 {
				v, ok := ref[refKey{subset, metric, q}]
				if !ok {
					t.Fatalf("reference lacks %s %s %s", subset, metric, q)
				}
				return v
			}
			o := stats.Options{Seed: stats.Seed("parity", metric, subset)}
			mean, err := stats.Bootstrap(x, o)
			if err != nil {
				t.Fatal(err)
			}
			paired, err := stats.Compare(x, y, o)
			if err != nil {
				t.Fatal(err)
			}
			lattice := 0.0
			if n <= 35 {
				lattice = 1 / float64(n) // values in [0, 1]: means of n queries step by at most 1/n
			}
			where := fmt.Sprintf("%s (n=%d) %s", subset, n, metric)
			for _, c := range []struct {
				name    string
				iv      stats.Interval
				refName string
			}{{"mean", mean, "mean"}, {"paired difference", paired.Diff, "diff"}} {
				se := get(c.refName + ".se")
				bound := 0.16*se + lattice
				if d := math.Abs(c.iv.Lo - get(c.refName+".lo")); d > bound {
					t.Errorf("%s %s: lower bound %.5f, scipy %.5f (|Δ| %.5f > %.5f)", where, c.name, c.iv.Lo, get(c.refName+".lo"), d, bound)
				}
				if d := math.Abs(c.iv.Hi - get(c.refName+".hi")); d > bound {
					t.Errorf("%s %s: upper bound %.5f, scipy %.5f (|Δ| %.5f > %.5f)", where, c.name, c.iv.Hi, get(c.refName+".hi"), d, bound)
				}
				if rel := math.Abs(c.iv.StdErr-se) / se; rel > 0.04 {
					t.Errorf("%s %s: standard error %.5f, scipy %.5f (%.1f%% apart)", where, c.name, c.iv.StdErr, se, 100*rel)
				}
				checked += 3
			}
			p := get("p")
			tol := 4*math.Sqrt(2*p*(1-p)/B) + 2.0/(B+1)
			if paired.Exact {
				tol = 1e-12
			}
			if n <= 13 && !paired.Exact {
				t.Errorf("%s: 2^12 ≤ %d flips, yet the test sampled", where, B)
			}
			if d := math.Abs(paired.P - p); d > tol {
				t.Errorf("%s: p %.5f, scipy %.5f (|Δ| %.5f > %.5f)", where, paired.P, p, d, tol)
			}
			checked++
			t.Logf("%s: mean %s [%.4f, %.4f] (scipy [%.4f, %.4f]); diff %s p=%.4f (scipy %.4f)", where, mean.PlusMinus(), mean.Lo, mean.Hi,
				get("mean.lo"), get("mean.hi"), stats.FormatDiff(paired.Diff), paired.P, p)
		}
	}
	if checked != 63 {
		t.Fatalf("checked %d values, the reference has 63", checked)
	}
	// Side by side with scipy's time (the "#seconds" notes above): one bootstrap and one
	// randomization test of 300 queries here.
	start := time.Now()
	_, _ = stats.Bootstrap(column(t, "scifact-bm25-w200.json.gz", "ndcg@10"), stats.Options{})
	t.Logf("Go: bootstrap of 300 queries %.4f s (benchmarks: go test -bench . ./evaluator/stats)", time.Since(start).Seconds())
}
