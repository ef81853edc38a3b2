// Package stats gives the uncertainty of retrieval metrics measured over a set of queries:
// percentile bootstrap intervals of a mean, the paired randomization (sign-flip) test of a
// mean difference, and the non-inferiority decision of a rollout gate.
//
// Queries are the sampling unit: a metric's per-query values are taken as a sample of the
// queries the index will serve, and every interval is over resampled queries. Two systems
// evaluated on the same queries are compared through their per-query differences (a paired
// design), which removes the large between-query variance that unpaired comparisons carry.
//
// Sources:
//   - B. Efron and R. J. Tibshirani, An Introduction to the Bootstrap, Chapman & Hall 1993:
//     the percentile interval (ch. 13.3) and the bootstrap standard error (ch. 6).
//   - M. D. Smucker, J. Allan and B. Carterette, "A Comparison of Statistical Significance
//     Tests for Information Retrieval Evaluation", CIKM 2007: the paired randomization test
//     over per-query differences (and its agreement with the bootstrap).
//   - B. Phipson and G. K. Smyth, "Permutation P-values Should Never Be Zero", Stat. Appl.
//     Genet. Mol. Biol. 9(1) 2010: the (b+1)/(B+1) estimate of a sampled p-value.
//   - T. Sakai, "Topic set size design", Information Retrieval Journal 19(3) 2016: the number
//     of topics (queries) a confidence interval of a given width needs, from the per-topic
//     variance.
//
// Every random draw comes from a PCG generator seeded by the caller (see Seed), so the same
// values and seed give the same interval and p-value on every machine. The results agree
// with scipy.stats.bootstrap (method="percentile") and scipy.stats.permutation_test
// (permutation_type="samples") within the Monte-Carlo error of the resample count; the
// parity test (hack/stats-reference) states the tolerance.
package stats

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Defaults of the resample counts and the confidence level (issue 37: 10,000 resamples,
// 95% intervals).
const (
	DefaultResamples  = 10000
	DefaultFlips      = 10000
	DefaultConfidence = 0.95
)

// Seed derives a 64-bit seed from a text such as an Evaluation's UID plus a purpose
// ("recall@10"), so that a re-run of the same Evaluation draws the same resamples: the first
// 8 bytes (big endian) of SHA-256 over the parts joined by NUL bytes.
func Seed(parts ...string) uint64 {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// newRand returns the generator of a seed; the second PCG word is a fixed odd constant.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// Interval is a bootstrap estimate of a mean over queries.
type Interval struct {
	// N is the number of queries; Mean their mean value.
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	// StdErr is the bootstrap standard error: the standard deviation (n−1 denominator) of
	// the resampled means.
	StdErr float64 `json:"stderr"`
	// Lo and Hi bound the percentile interval at Confidence (e.g. 0.95: the 2.5th and 97.5th
	// percentiles of the resampled means, linearly interpolated as numpy.percentile does).
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
	// Resamples is the number of bootstrap resamples drawn.
	Resamples int `json:"resamples"`
}

// Options set the resample counts and the confidence level; zero values take the defaults.
type Options struct {
	// Resamples is the number of bootstrap resamples (default DefaultResamples).
	Resamples int
	// Flips is the number of random sign-flip assignments of the randomization test (default
	// DefaultFlips); with n ≤ log2(Flips) queries every assignment is enumerated instead.
	Flips int
	// Confidence is the two-sided coverage of intervals, in (0, 1) (default 0.95).
	Confidence float64
	// Seed seeds every draw (see Seed).
	Seed uint64
}

func (o Options) withDefaults() (Options, error) {
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	if o.Flips == 0 {
		o.Flips = DefaultFlips
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if o.Resamples < 2 || o.Flips < 1 {
		return o, fmt.Errorf("stats: %d resamples and %d flips, want at least 2 and 1", o.Resamples, o.Flips)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return o, fmt.Errorf("stats: confidence %v, want a level in (0, 1)", o.Confidence)
	}
	return o, nil
}

// ErrNoValues is returned for an empty sample.
var ErrNoValues = errors.New("stats: no per-query values")

func checkFinite(values []float64) error {
	if len(values) == 0 {
		return ErrNoValues
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("stats: value %d is %v, want a finite number", i, v)
		}
	}
	return nil
}

// Mean returns the arithmetic mean of values (0 for none), summed in order.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range values {
		s += v
	}
	return s / float64(len(values))
}

// StdDev returns the sample standard deviation (n−1 denominator) of values; 0 for fewer
// than two.
func StdDev(values []float64) float64 {
	n := len(values)
	if n < 2 {
		return 0
	}
	m := Mean(values)
	ss := 0.0
	for _, v := range values {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(n-1))
}

// Bootstrap returns the percentile bootstrap interval of the mean of values (Efron and
// Tibshirani 1993, ch. 13.3): o.Resamples samples of len(values) drawn with replacement,
// their means sorted, the (1−c)/2 and (1+c)/2 percentiles as the bounds and the standard
// deviation of the means as the standard error. O(n·Resamples) time; 300 queries take about
// 10 ms. A single query, or identical values, gives an interval of zero width.
// Errors: no values, a NaN or infinite value, invalid options.
func Bootstrap(values []float64, o Options) (Interval, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Interval{}, err
	}
	if err := checkFinite(values); err != nil {
		return Interval{}, err
	}
	n := len(values)
	means := make([]float64, o.Resamples)
	r := newRand(o.Seed)
	un := uint64(n)
	for b := range means {
		s := 0.0
		for range n {
			s += values[boundedIndex(r, un)]
		}
		means[b] = s / float64(n)
	}
	slices.Sort(means)
	alpha := (1 - o.Confidence) / 2
	return Interval{
		N: n, Mean: Mean(values), StdErr: StdDev(means),
		Lo: percentile(means, alpha), Hi: percentile(means, 1-alpha),
		Confidence: o.Confidence, Resamples: o.Resamples,
	}, nil
}

// boundedIndex draws a uniform integer in [0, n) (Lemire's multiply-shift with rejection).
func boundedIndex(r *rand.Rand, n uint64) int {
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return int(hi)
}

// percentile returns the q-quantile (0 ≤ q ≤ 1) of sorted values with linear interpolation
// between closest ranks (numpy.percentile's default "linear" method, Hyndman and Fan type 7).
func percentile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// Paired is the comparison of a candidate with a baseline over the same queries.
type Paired struct {
	// Diff is the bootstrap interval of the mean per-query difference (candidate − baseline).
	Diff Interval `json:"diff"`
	// P is the two-sided p-value of the paired randomization test of a zero mean difference.
	P float64 `json:"p"`
	// Flips is the number of sign assignments the p-value is over; Exact is set when all
	// 2^n were enumerated.
	Flips int  `json:"flips"`
	Exact bool `json:"exact,omitempty"`
	// Better, Worse and Tied count queries whose candidate value is above, below or equal
	// to the baseline's.
	Better int `json:"better"`
	Worse  int `json:"worse"`
	Tied   int `json:"tied"`
}

// Differences returns candidate[i] − baseline[i]. Errors: different lengths.
func Differences(candidate, baseline []float64) ([]float64, error) {
	if len(candidate) != len(baseline) {
		return nil, fmt.Errorf("stats: %d candidate values and %d baseline values; a paired comparison needs the same queries", len(candidate), len(baseline))
	}
	d := make([]float64, len(candidate))
	for i := range d {
		d[i] = candidate[i] - baseline[i]
	}
	return d, nil
}

// Compare runs the paired comparison of candidate and baseline, which hold the values of
// the same queries in the same order: the bootstrap interval of the mean difference (the
// queries resampled as pairs) and the randomization test's p-value (RandomizationTest), with
// the counts of better, worse and tied queries. The interval and the test use independent
// streams derived from o.Seed. Errors: as Bootstrap, and different lengths.
func Compare(candidate, baseline []float64, o Options) (Paired, error) {
	d, err := Differences(candidate, baseline)
	if err != nil {
		return Paired{}, err
	}
	iv, err := Bootstrap(d, o)
	if err != nil {
		return Paired{}, err
	}
	o.Seed ^= 0x5bd1e9955bd1e995
	p, flips, exact, err := RandomizationTest(d, o)
	if err != nil {
		return Paired{}, err
	}
	out := Paired{Diff: iv, P: p, Flips: flips, Exact: exact}
	for _, v := range d {
		switch {
		case v > 0:
			out.Better++
		case v < 0:
			out.Worse++
		default:
			out.Tied++
		}
	}
	return out, nil
}

// RandomizationTest returns the two-sided p-value of the paired randomization test of a
// zero mean of the per-query differences d (Smucker, Allan and Carterette 2007): under the
// null hypothesis the two systems are exchangeable on each query, so each difference's sign
// is flipped at random; the p-value is the share of assignments whose |mean| is at least the
// observed |mean| (within a relative 1e-12, so that exact ties count despite rounding).
// With 2^n ≤ o.Flips every assignment is enumerated and the p-value is exact (exact = true);
// otherwise o.Flips random assignments give (b+1)/(Flips+1) (Phipson and Smyth 2010), the
// estimate scipy.stats.permutation_test makes. flips is the number of assignments counted.
// All-zero differences give p = 1.
func RandomizationTest(d []float64, o Options) (p float64, flips int, exact bool, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return 0, 0, false, err
	}
	if err := checkFinite(d); err != nil {
		return 0, 0, false, err
	}
	n := len(d)
	obs := math.Abs(sumOf(d))
	tol := 1e-12 * obs
	if n < 63 && uint64(1)<<n <= uint64(o.Flips) {
		total := uint64(1) << n
		hits := 0
		for mask := range total {
			s := 0.0
			for i, v := range d {
				if mask&(1<<i) != 0 {
					s -= v
				} else {
					s += v
				}
			}
			if math.Abs(s) >= obs-tol {
				hits++
			}
		}
		return float64(hits) / float64(total), int(total), true, nil
	}
	r := newRand(o.Seed)
	hits := 0
	for range o.Flips {
		s := 0.0
		var word uint64
		for i, v := range d {
			if i%64 == 0 {
				word = r.Uint64()
			}
			if word&1 != 0 {
				s -= v
			} else {
				s += v
			}
			word >>= 1
		}
		if math.Abs(s) >= obs-tol {
			hits++
		}
	}
	return float64(hits+1) / float64(o.Flips+1), o.Flips, false, nil
}

func sumOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
