package stats

import (
	"fmt"
	"math"
)

// DriftTolerance is how far past −maxDrop the upper bound must lie for DriftTest to call a
// drop: per-query values are rounded to 6 decimals (k/n fractions), so a run exactly maxDrop
// worse on every query has a bound that differs from −maxDrop only by float rounding, and
// such a tie is a held run, not a drop.
const DriftTolerance = 1e-9

// Drift is the decision of a scheduled quality check on one metric: whether a run is worse
// than its baseline run by more than the allowed drop.
type Drift struct {
	// Diff is the bootstrap interval of the mean paired difference run − baseline.
	Diff Interval `json:"diff"`
	// MaxDrop is the largest drop allowed (≥ 0).
	MaxDrop float64 `json:"maxDrop"`
	// Dropped is set when Diff.Hi < −MaxDrop − DriftTolerance.
	Dropped bool `json:"dropped"`
}

// DriftTest decides whether run is worse than baseline, the same queries in the same order,
// by more than maxDrop: the mirror of NonInferiorityTest. It is Dropped when the upper bound
// of the percentile bootstrap interval of the mean paired difference (run − baseline), at
// o.Confidence, is below −maxDrop (by more than DriftTolerance): a one-sided test at level
// (1−c)/2 (2.5% at 0.95) of "the drop is at most maxDrop", so an alert needs evidence of a
// drop beyond the allowance, not merely a significant difference. A drop of exactly maxDrop
// is held, and maxDrop 0 calls any significant drop. Errors: as Compare; a negative or
// non-finite maxDrop.
func DriftTest(run, baseline []float64, maxDrop float64, o Options) (Drift, error) {
	if maxDrop < 0 || math.IsNaN(maxDrop) || math.IsInf(maxDrop, 0) {
		return Drift{}, fmt.Errorf("stats: maxDrop %v, want a finite number >= 0", maxDrop)
	}
	d, err := Differences(run, baseline)
	if err != nil {
		return Drift{}, err
	}
	iv, err := Bootstrap(d, o)
	if err != nil {
		return Drift{}, err
	}
	return Drift{Diff: iv, MaxDrop: maxDrop, Dropped: iv.Hi < -maxDrop-DriftTolerance}, nil
}

// Message says the decision in one line, e.g. "recall@10 −0.050 [−0.062, −0.038] is below
// the allowed −0.020 with 97.5% confidence: quality dropped".
func (r Drift) Message(metric string) string {
	head := fmt.Sprintf("%s %s", metric, FormatDiff(r.Diff))
	allowed := Signed(-r.MaxDrop, 3)
	level := fmt.Sprintf("%g%%", math.Round((1+r.Diff.Confidence)/2*1000)/10)
	switch {
	case r.Dropped:
		return fmt.Sprintf("%s is below the allowed %s with %s confidence: quality dropped", head, allowed, level)
	case r.Diff.Mean < -r.MaxDrop-DriftTolerance:
		return fmt.Sprintf("%s: the mean is below the allowed %s but the interval is not; %d queries are too few to call a drop at %s confidence", head, allowed, r.Diff.N, level)
	default:
		return fmt.Sprintf("%s is within the allowed %s", head, allowed)
	}
}
