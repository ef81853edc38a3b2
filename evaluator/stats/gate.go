package stats

import (
	"fmt"
	"math"
)

// Verdict is the outcome of a non-inferiority test.
type Verdict string

// The verdicts of NonInferiorityTest.
const (
	// NonInferior: the lower bound of the difference's interval is at or above −margin
	// (WithinMargin).
	NonInferior Verdict = "NonInferior"
	// Inconclusive: the observed mean difference is within the margin but the interval
	// reaches past it; more queries are needed to tell a loss within the margin from noise.
	Inconclusive Verdict = "Inconclusive"
	// Inferior: the observed mean difference itself is beyond −margin (not WithinMargin).
	Inferior Verdict = "Inferior"
)

// MarginTolerance is how close to −margin a difference must come to count as at it (1e-9,
// absolute): far above the rounding of a float mean of per-query values in [0, 1] (about
// n·2⁻⁵² for n queries, 2e-12 at 10,000) and of a margin or a status metric written in
// decimals, and far below any step a mean can take (1/n of a per-query step, 1e-6 for
// 10,000 queries whose values move by 0.01). A difference that is exactly −margin in exact
// arithmetic (every query exactly margin worse) is thus at the margin whatever its rounding.
const MarginTolerance = 1e-9

// WithinMargin is the gate's one rule, shared by the interval test (on its lower bound) and
// the comparison of two means (on their difference): a difference d = candidate − active is
// within margin when d ≥ −margin − MarginTolerance. A tie falls on the passing side: a loss
// of exactly margin is allowed, and margin 0 means "no loss": an identical candidate (d = 0)
// passes, and so does one better on some queries and worse on none.
func WithinMargin(d, margin float64) bool { return d >= -margin-MarginTolerance }

// NonInferiority is the decision of a rollout gate on one metric.
type NonInferiority struct {
	// Diff is the bootstrap interval of the mean difference candidate − active.
	Diff Interval `json:"diff"`
	// Margin is the largest loss allowed (maxRegression, ≥ 0).
	Margin  float64 `json:"margin"`
	Verdict Verdict `json:"verdict"`
	// QueriesNeeded estimates, for an Inconclusive verdict, the number of queries with which
	// the lower bound would clear −Margin if the observed mean difference and per-query
	// standard deviation held (see QueriesForMargin); 0 otherwise, and 0 when the mean
	// difference is at −Margin (within MarginTolerance), where no number of queries helps.
	QueriesNeeded int `json:"queriesNeeded,omitempty"`
}

// Passed reports whether the candidate may be promoted.
func (r NonInferiority) Passed() bool { return r.Verdict == NonInferior }

// NonInferiorityTest decides whether candidate is no worse than active by more than margin
// on the same queries (same order). The candidate passes when the lower bound of the
// percentile bootstrap interval of the mean paired difference (candidate − active), at
// o.Confidence, is at or above −margin (WithinMargin: a tie passes, within MarginTolerance).
// The bound is that of the two-sided interval shown in status and messages, so at
// confidence c the test's one-sided level is (1−c)/2 (2.5% at 0.95): conservative, as a
// gate should be. When it fails, the verdict says whether the
// observed difference is itself beyond the margin (Inferior) or the interval is too wide to
// tell (Inconclusive, with the queries needed). Errors: as Compare; a negative or non-finite
// margin.
func NonInferiorityTest(candidate, active []float64, margin float64, o Options) (NonInferiority, error) {
	if margin < 0 || math.IsNaN(margin) || math.IsInf(margin, 0) {
		return NonInferiority{}, fmt.Errorf("stats: margin %v, want a finite number >= 0", margin)
	}
	d, err := Differences(candidate, active)
	if err != nil {
		return NonInferiority{}, err
	}
	iv, err := Bootstrap(d, o)
	if err != nil {
		return NonInferiority{}, err
	}
	out := NonInferiority{Diff: iv, Margin: margin}
	switch {
	case WithinMargin(iv.Lo, margin):
		out.Verdict = NonInferior
	case !WithinMargin(iv.Mean, margin):
		out.Verdict = Inferior
	default:
		out.Verdict = Inconclusive
		if slack := iv.Mean + margin; slack > MarginTolerance {
			out.QueriesNeeded = QueriesForMargin(StdDev(d), slack, iv.Confidence)
		}
	}
	return out, nil
}

// QueriesForMargin returns the number of queries n whose c-level interval of a mean has a
// half-width below slack, for per-query standard deviation sd: the smallest n with
// z·sd/√n < slack, z = Φ⁻¹((1+c)/2), the normal form of Sakai's CI-based topic set size
// design (Sakai 2016, sec. 4). In a gate, slack is the observed mean difference plus the
// margin: the room between the point estimate and −margin. Returns 0 when slack ≤ 0 (no
// number of queries helps) and 1 when sd is 0.
func QueriesForMargin(sd, slack, confidence float64) int {
	if !(slack > 0) {
		return 0
	}
	z := math.Sqrt2 * math.Erfinv(confidence)
	n := math.Pow(z*sd/slack, 2)
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(1, int(math.Floor(n))+1)
}

// Message says the decision in one line, e.g.
// "recall@10 −0.004 [−0.019, +0.011] is within the allowed −0.010".
func (r NonInferiority) Message(metric string) string {
	head := fmt.Sprintf("%s %s", metric, FormatDiff(r.Diff))
	allowed := Signed(-r.Margin, 3)
	switch r.Verdict {
	case NonInferior:
		return fmt.Sprintf("%s is within the allowed %s", head, allowed)
	case Inferior:
		if r.Diff.Hi >= 0 {
			// Worse than the margin by the point estimate, yet not significantly worse than
			// the active revision: say so, the message is read to decide what to try next.
			return fmt.Sprintf("%s is worse than the allowed %s (its interval includes 0: at %d queries not a significant loss)", head, allowed, r.Diff.N)
		}
		return fmt.Sprintf("%s is worse than the allowed %s", head, allowed)
	default:
		if r.QueriesNeeded == 0 {
			// The mean difference is at the margin: more queries narrow the interval around it,
			// never above it.
			return fmt.Sprintf("%s: the difference is at the allowed %s but its interval is not within it; no number of queries tells a loss of exactly the margin from a larger one",
				head, allowed)
		}
		return fmt.Sprintf("%s: the difference is within the allowed %s but its interval is not; %d queries are too few to tell (this margin needs about %d at the observed variance)",
			head, allowed, r.Diff.N, r.QueriesNeeded)
	}
}
