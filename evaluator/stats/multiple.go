package stats

// Many systems compared on the same queries at once: the max-statistic randomization test.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Family is the outcome of MaxRangeTest: k systems scored on the same n queries, and the
// permutation distribution of the largest difference between any two of their means under
// the hypothesis that the systems are exchangeable on every query.
type Family struct {
	// Means are the systems' mean values over the queries, in the order given.
	Means []float64
	// N is the number of queries; Permutations the number of random permutations drawn.
	N            int
	Permutations int
	// ranges are the permuted ranges (max mean − min mean), sorted descending.
	ranges []float64
}

// MaxRangeTest runs the randomized Tukey HSD test of k systems (values[i] holds system i's
// per-query values, every system the same queries in the same order): o.Flips times, each
// query's k values are permuted among the systems at random and the range of the k means
// (largest minus smallest) is recorded. A pair's adjusted p-value (P) is the share of
// permutations whose range is at least the pair's observed |difference|, so every pair —
// including the best against the worst, picked after the fact — is judged against the
// largest difference chance makes among all k. This is the single-step max-statistic
// (maxT) adjustment of P. H. Westfall and S. S. Young, Resampling-Based Multiple Testing,
// Wiley 1993, with the range of means as the statistic, as B. Carterette, "Multiple Testing
// in Statistical Analysis of Systems-Based Information Retrieval Experiments", ACM TOIS
// 30(1) 2012, applies it to IR evaluation; it bounds the family-wise error rate (any pair
// declared different when all k are alike) by alpha. Queries whose k values are all equal
// add nothing to any difference and are skipped. O(k·n·Flips) time. The p-values use
// (b+1)/(Flips+1) (Phipson and Smyth 2010). Errors: fewer than two systems, systems of
// different lengths, non-finite values, invalid options.
func MaxRangeTest(values [][]float64, o Options) (*Family, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	k := len(values)
	if k < 2 {
		return nil, fmt.Errorf("stats: %d systems, want at least 2", k)
	}
	n := len(values[0])
	for i, v := range values {
		if len(v) != n {
			return nil, fmt.Errorf("stats: system %d has %d values, system 0 has %d; the systems must score the same queries", i, len(v), n)
		}
		if err := checkFinite(v); err != nil {
			return nil, fmt.Errorf("system %d: %w", i, err)
		}
	}
	f := &Family{Means: make([]float64, k), N: n, Permutations: o.Flips}
	for i, v := range values {
		f.Means[i] = Mean(v)
	}
	// The varying queries, each row the k systems' values.
	var rows [][]float64
	for q := range n {
		row := make([]float64, k)
		same := true
		for i := range values {
			row[i] = values[i][q]
			same = same && row[i] == row[0]
		}
		if !same {
			rows = append(rows, row)
		}
	}
	r := newRand(o.Seed)
	sums := make([]float64, k)
	buf := make([]float64, k)
	f.ranges = make([]float64, o.Flips)
	for b := range f.ranges {
		clear(sums)
		for _, row := range rows {
			copy(buf, row)
			for i := k - 1; i > 0; i-- { // Fisher-Yates
				j := boundedIndex(r, uint64(i+1))
				buf[i], buf[j] = buf[j], buf[i]
			}
			for i, v := range buf {
				sums[i] += v
			}
		}
		f.ranges[b] = (slices.Max(sums) - slices.Min(sums)) / float64(n)
	}
	slices.SortFunc(f.ranges, func(a, b float64) int { return cmp.Compare(b, a) })
	return f, nil
}

// exceeding is the number of permuted ranges at least d (within a relative 1e-12, so that
// exact ties count despite rounding).
func (f *Family) exceeding(d float64) int {
	d = math.Abs(d)
	d -= 1e-12 * d
	// ranges is descending: the count is the first index whose range is below d.
	i, _ := slices.BinarySearchFunc(f.ranges, d, func(r, t float64) int {
		if r >= t {
			return -1
		}
		return 1
	})
	return i
}

// Difference is Means[i] − Means[j].
func (f *Family) Difference(i, j int) float64 { return f.Means[i] - f.Means[j] }

// P is the adjusted two-sided p-value of the difference between systems i and j.
func (f *Family) P(i, j int) float64 {
	return float64(f.exceeding(f.Difference(i, j))+1) / float64(f.Permutations+1)
}

// Differs reports whether systems i and j are told apart at family-wise level alpha:
// P(i, j) < alpha.
func (f *Family) Differs(i, j int, alpha float64) bool { return f.P(i, j) < alpha }

// Critical is the largest |difference| of two means that is not told apart at level alpha:
// Differs(i, j, alpha) exactly when |Difference(i, j)| exceeds it (up to the 1e-12
// tolerance of ties). +Inf when too few permutations were drawn to reach alpha.
func (f *Family) Critical(alpha float64) float64 {
	// The largest count of exceeding permutations with (count+1)/(B+1) < alpha.
	m := -1
	for c := 0; c < len(f.ranges) && float64(c+1)/float64(f.Permutations+1) < alpha; c++ {
		m = c
	}
	if m < 0 {
		return math.Inf(1)
	}
	if m >= len(f.ranges) {
		return math.Inf(-1)
	}
	return f.ranges[m]
}

// Interval is the simultaneous confidence interval of Difference(i, j) at family-wise level
// alpha: the difference ± Critical(alpha) (Tukey's form; it holds 0 exactly when the pair is
// not told apart).
func (f *Family) Interval(i, j int, alpha float64) (lo, hi float64) {
	d, c := f.Difference(i, j), f.Critical(alpha)
	return d - c, d + c
}
