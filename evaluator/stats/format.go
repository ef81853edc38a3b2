package stats

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// HalfWidth is half the width of the interval, the "± h" of PlusMinus.
func (iv Interval) HalfWidth() float64 { return (iv.Hi - iv.Lo) / 2 }

// PlusMinus formats the mean with half the interval's width at 3 decimals, e.g.
// "0.812 ± 0.031". A percentile interval need not be symmetric around the mean; Lo and Hi
// give its exact bounds.
func (iv Interval) PlusMinus() string {
	return fmt.Sprintf("%.3f ± %.3f", iv.Mean, iv.HalfWidth())
}

// FormatDiff formats a difference with its interval, signed, at 3 decimals and with the
// minus sign U+2212: "−0.004 [−0.019, +0.011]". Zero is printed unsigned.
func FormatDiff(iv Interval) string {
	return fmt.Sprintf("%s [%s, %s]", Signed(iv.Mean, 3), Signed(iv.Lo, 3), Signed(iv.Hi, 3))
}

// Signed formats v at prec decimals with an explicit sign ("+" or U+2212); a value that
// rounds to zero has none.
func Signed(v float64, prec int) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', prec, 64)
	if strings.Trim(s, "0.") == "" {
		return s
	}
	if v < 0 {
		return "\u2212" + s
	}
	return "+" + s
}

// OfMetric is the interval a status metric carries: the percentile bootstrap of the mean of
// a metric's per-query values with the defaults (10,000 resamples, 95%), seeded from the
// Evaluation's UID and the metric's name (Seed(uid, metric)), so that a re-run of the same
// Evaluation on the same values gives the same interval. Errors: as Bootstrap.
func OfMetric(values []float64, uid, metric string) (Interval, error) {
	return Bootstrap(values, Options{Seed: Seed(uid, metric)})
}

// Rounded returns iv with Mean, StdErr, Lo and Hi rounded to 4 decimals, as status shows
// metrics.
func (iv Interval) Rounded() Interval {
	r := func(v float64) float64 { return math.Round(v*1e4) / 1e4 }
	iv.Mean, iv.StdErr, iv.Lo, iv.Hi = r(iv.Mean), r(iv.StdErr), r(iv.Lo), r(iv.Hi)
	return iv
}
