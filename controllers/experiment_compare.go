package controllers

// The leaderboard's confidence: each candidate's objective interval (from its Evaluation's
// status) and paired comparisons over the per-query results (evaluator/stats).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/stats"
)

// tieAlpha is the significance level below which a candidate is told apart from the best.
const tieAlpha = 0.05

// objectiveColumn is the per-query results column of the objective, e.g. "ndcg@10".
func objectiveColumn(obj ragopsv1alpha1.ExperimentObjective) string {
	return fmt.Sprintf("%s@%d", obj.Metric, obj.K)
}

// objectiveInterval returns the interval of the objective's mean from an Evaluation's
// figures at its cut-off (nil when the Evaluation reported none).
func objectiveInterval(at ragopsv1alpha1.MetricsAtK, m ragopsv1alpha1.ObjectiveMetric) *ragopsv1alpha1.ConfidenceInterval {
	switch m {
	case ragopsv1alpha1.ObjectiveNDCG:
		return at.NDCGInterval
	case ragopsv1alpha1.ObjectiveMRR:
		return at.MRRInterval
	case ragopsv1alpha1.ObjectiveSpanHit:
		return at.SpanHitInterval
	}
	return at.RecallInterval
}

// withInterval fills v's interval from the Evaluation's figures.
func withInterval(v ragopsv1alpha1.ObjectiveValue, at ragopsv1alpha1.MetricsAtK, m ragopsv1alpha1.ObjectiveMetric) ragopsv1alpha1.ObjectiveValue {
	if ci := objectiveInterval(at, m); ci != nil {
		v.IntervalLower, v.IntervalUpper = ptr.To(ci.Lower), ptr.To(ci.Upper)
		v.ConfidenceLevel = "0.95"
	}
	return v
}

// pairedCache memoises paired comparisons by the two Evaluations' UIDs, their results'
// SHA-256 and the metric: the per-query results of a finished Evaluation never change, so a
// comparison is computed once per pair, not on every reconcile. It holds at most
// pairedCacheSize comparisons and starts afresh when full.
type pairedCache struct {
	mu sync.Mutex
	m  map[string]stats.Paired
}

const pairedCacheSize = 4096

func (c *pairedCache) get(key string) (stats.Paired, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[key]
	return p, ok
}

func (c *pairedCache) put(key string, p stats.Paired) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= pairedCacheSize {
		c.m = map[string]stats.Paired{}
	}
	c.m[key] = p
}

// pairedComparison compares Evaluation best with other on the objective over their common
// queries (stats.Compare: bootstrap interval of the mean difference best − other and the
// paired randomization test's p-value). why is not empty when they cannot be paired: one has
// no per-query results, or they scored different queries. Errors: transient reads, and
// errResultsCollecting while results are being stored.
func (r *ExperimentReconciler) pairedComparison(ctx context.Context, metric string, best, other *ragopsv1alpha1.Evaluation) (p stats.Paired, why string, err error) {
	if best.Status.Results == nil || other.Status.Results == nil {
		return p, "no per-query results", nil
	}
	key := fmt.Sprintf("%s/%s/%s/%s/%s", best.UID, best.Status.Results.SHA256, other.UID, other.Status.Results.SHA256, metric)
	if p, ok := r.paired.get(key); ok {
		return p, "", nil
	}
	rd := r.Options.reader(r.Client)
	b, why, err := perQueryValues(ctx, rd, best, metric, "Evaluation "+best.Name)
	if err != nil || why != "" {
		return p, why, err
	}
	o, why, err := perQueryValues(ctx, rd, other, metric, "Evaluation "+other.Name)
	if err != nil || why != "" {
		return p, why, err
	}
	if b.fingerprint != o.fingerprint || !slices.Equal(b.ids, o.ids) {
		return p, fmt.Sprintf("Evaluations %s and %s scored different queries (fingerprints %.12s and %.12s)", best.Name, other.Name, b.fingerprint, o.fingerprint), nil
	}
	p, err = stats.Compare(b.values, o.values, stats.Options{Seed: stats.Seed(b.uid, o.uid, metric)})
	if err != nil {
		return p, err.Error(), nil
	}
	r.paired.put(key, p)
	return p, "", nil
}

// comparison is a CandidateComparison of best with other from their paired comparison; the
// interval and p-value are left out when the two cannot be paired.
func comparison(best, other ragopsv1alpha1.LeaderboardEntry, p *stats.Paired) *ragopsv1alpha1.CandidateComparison {
	c := &ragopsv1alpha1.CandidateComparison{Trial: other.Trial, Retrieval: other.Retrieval,
		Difference: Round(best.Objective.Value - other.Objective.Value)}
	if p != nil {
		c.IntervalLower, c.IntervalUpper = ptr.To(Round(p.Diff.Lo)), ptr.To(Round(p.Diff.Hi))
		c.PValue = ptr.To(Round(p.P))
	}
	return c
}

// candidateEvaluations maps a leaderboard candidate (trial, retrieval) to its live
// Evaluation, for the paired comparisons.
type candidateEvaluations map[[2]string]*ragopsv1alpha1.Evaluation

// compareWithBest fills, for every entry below the best, VsBest and TiedWithBest from the
// paired comparison with the best, and the optimal candidate's comparisons with the
// baseline and the runner-up. A candidate whose Evaluation is gone (cleaned up) keeps the
// comparison it had while the best was the same. It returns how many candidates are tied
// with the best, and collecting when a comparison waits for per-query results still being
// stored. Only the leaderboard's entries and the baseline are compared.
func (r *ExperimentReconciler) compareWithBest(ctx context.Context, exp *ragopsv1alpha1.Experiment, all []ragopsv1alpha1.LeaderboardEntry, evs candidateEvaluations, opt *ragopsv1alpha1.OptimalTrial, baseline [2]string) (tied int, collecting bool, err error) {
	if len(all) == 0 {
		return 0, false, nil
	}
	metric := objectiveColumn(exp.Spec.Objective)
	best := all[0]
	prevBest := ""
	prev := map[[2]string]ragopsv1alpha1.LeaderboardEntry{}
	if len(exp.Status.Leaderboard) > 0 {
		prevBest = exp.Status.Leaderboard[0].Trial + "/" + exp.Status.Leaderboard[0].Retrieval
		for _, e := range exp.Status.Leaderboard {
			prev[[2]string{e.Trial, e.Retrieval}] = e
		}
	}
	sameBest := prevBest == best.Trial+"/"+best.Retrieval
	bestEv := evs[[2]string{best.Trial, best.Retrieval}]
	var firstErr error
	paired := func(e ragopsv1alpha1.LeaderboardEntry) *stats.Paired {
		other := evs[[2]string{e.Trial, e.Retrieval}]
		if bestEv == nil || other == nil {
			return nil
		}
		p, why, err := r.pairedComparison(ctx, metric, bestEv, other)
		if errors.Is(err, errResultsCollecting) {
			collecting = true
			return nil
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return nil
		}
		if why != "" {
			return nil
		}
		return &p
	}
	n := leaderboardSize(exp)
	for i := 1; i < len(all); i++ {
		e := &all[i]
		if i >= n && (e.Trial != baseline[0] || e.Retrieval != baseline[1]) {
			continue // off the leaderboard: not compared
		}
		if p := paired(*e); p != nil {
			e.VsBest = comparison(best, *e, p)
		} else if old, ok := prev[[2]string{e.Trial, e.Retrieval}]; ok && sameBest && evs[[2]string{e.Trial, e.Retrieval}] == nil {
			e.VsBest = old.VsBest
		}
		if e.VsBest != nil && e.VsBest.PValue != nil && *e.VsBest.PValue >= tieAlpha {
			e.TiedWithBest = true
			tied++
		}
	}
	vs := func(e ragopsv1alpha1.LeaderboardEntry) *ragopsv1alpha1.CandidateComparison {
		if e.VsBest != nil {
			return e.VsBest
		}
		return comparison(best, e, nil)
	}
	for _, e := range all[1:] {
		if e.Trial == baseline[0] && e.Retrieval == baseline[1] {
			opt.VsBaseline = vs(e)
		}
	}
	if len(all) > 1 {
		opt.VsRunnerUp = vs(all[1])
	}
	return tied, collecting, firstErr
}

// evaluationOf returns the live Evaluation of a trial's retrieval variant, nil when it was
// cleaned up or has not finished on the trial's revision.
func evaluationOf(ch *experimentChildren, ts ragopsv1alpha1.TrialStatus, te ragopsv1alpha1.TrialEvaluation, k int32) (*ragopsv1alpha1.Evaluation, *evalMetrics) {
	ev, ok := ch.evaluations[te.Evaluation]
	if !ok {
		return nil, nil
	}
	m, ok := objectiveOf(ev, ts.Revision, k)
	if !ok {
		return nil, nil
	}
	return ev, &m
}
