package controllers

// The leaderboard's confidence: each candidate's objective interval (from its Evaluation's
// status) and the comparisons of all candidates at once over their per-query results
// (evaluator/stats.MaxRangeTest), which decide the ties and the optimal candidate.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/experiment/winner"
)

// tieAlpha is the family-wise level at which a candidate is told apart from another: with
// every candidate alike, the leaderboard shows any candidate "not tied" with the best in at
// most this share of Experiments (stats.MaxRangeTest).
const tieAlpha = 0.05

// familyPermutations is the number of permutations of the leaderboard's max-range test: its
// p-values are multiples of 1/2000, exact at the status's 4 decimals.
const familyPermutations = 1999

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

// family is the max-range test over the candidates that could be paired with the best:
// members[i] is the (trial, retrieval) of the test's system i.
type family struct {
	test    *stats.Family
	members [][2]string
}

// pairedCache memoises the leaderboard's comparisons: the max-range test of a set of
// candidates, by their Evaluations' UIDs, results' SHA-256 and the metric, and each
// Evaluation's per-query values of the metric. The per-query results of a finished
// Evaluation never change, so a test is computed once per set of candidates and a results
// ConfigMap read once, not on every reconcile. Each map holds at most pairedCacheSize
// entries and starts afresh when full.
type pairedCache struct {
	mu       sync.Mutex
	families map[string]family
	values   map[string]queryValues
}

const pairedCacheSize = 4096

func cacheGet[V any](mu *sync.Mutex, m map[string]V, key string) (V, bool) {
	mu.Lock()
	defer mu.Unlock()
	v, ok := m[key]
	return v, ok
}

func cachePut[V any](mu *sync.Mutex, m *map[string]V, key string, v V) {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil || len(*m) >= pairedCacheSize {
		*m = map[string]V{}
	}
	(*m)[key] = v
}

// candidateValues reads ev's per-query values of metric through the cache (perQueryValues).
func (r *ExperimentReconciler) candidateValues(ctx context.Context, ev *ragopsv1alpha1.Evaluation, metric string) (queryValues, string, error) {
	key := fmt.Sprintf("%s/%s/%s", ev.UID, ev.Status.Results.SHA256, metric)
	if v, ok := cacheGet(&r.paired.mu, r.paired.values, key); ok {
		return v, "", nil
	}
	v, why, err := perQueryValues(ctx, r.Options.reader(r.Client), ev, metric, "Evaluation "+ev.Name)
	if err != nil || why != "" {
		return v, why, err
	}
	cachePut(&r.paired.mu, &r.paired.values, key, v)
	return v, "", nil
}

// familyOf runs (or recalls) the max-range test over the candidates (in leaderboard order,
// the best first) whose Evaluations scored the same queries as the best's: the best, then
// every candidate whose per-query results pair with the best's. Candidates that cannot be
// paired (no per-query results, other queries) are left out. ok is false when the best has
// no per-query values or no other candidate pairs with it. collecting is set when a
// candidate's results are still being stored (the test then leaves it out and is not
// memoised). Errors: transient reads.
func (r *ExperimentReconciler) familyOf(ctx context.Context, metric string, cands [][2]string, evs candidateEvaluations) (f family, ok, collecting bool, err error) {
	var key strings.Builder
	key.WriteString(metric)
	var members [][2]string
	for _, c := range cands {
		if ev := evs[c]; ev != nil && ev.Status.Results != nil {
			members = append(members, c)
			fmt.Fprintf(&key, "/%s:%s", ev.UID, ev.Status.Results.SHA256)
		}
	}
	if len(members) < 2 || members[0] != cands[0] {
		return f, false, false, nil
	}
	if f, ok := cacheGet(&r.paired.mu, r.paired.families, key.String()); ok {
		return f, true, false, nil
	}
	var values [][]float64
	var uids []string
	var ref queryValues
	for i, c := range members {
		v, why, err := r.candidateValues(ctx, evs[c], metric)
		switch {
		case errors.Is(err, errResultsCollecting):
			if i == 0 {
				return f, false, true, nil
			}
			collecting = true
			continue
		case err != nil:
			return f, false, collecting, err
		case why != "":
			if i == 0 {
				return f, false, collecting, nil
			}
			continue
		}
		if i == 0 {
			ref = v
		} else if v.fingerprint != ref.fingerprint || !slices.Equal(v.ids, ref.ids) {
			continue // scored other queries: not comparable
		}
		f.members = append(f.members, c)
		values = append(values, v.values)
		uids = append(uids, v.uid)
	}
	if len(values) < 2 {
		return f, false, collecting, nil
	}
	f.test, err = stats.MaxRangeTest(values, stats.Options{Flips: familyPermutations, Seed: stats.Seed(append(uids, metric)...)})
	if err != nil {
		return f, false, collecting, nil
	}
	if !collecting {
		cachePut(&r.paired.mu, &r.paired.families, key.String(), f)
	}
	return f, true, collecting, nil
}

// comparison is a CandidateComparison of a with other: the difference of their objectives
// (a minus other) and, when both are in the family, the difference's simultaneous interval
// and adjusted p-value from the max-range test.
func comparison(a, other ragopsv1alpha1.LeaderboardEntry, f *family) *ragopsv1alpha1.CandidateComparison {
	c := &ragopsv1alpha1.CandidateComparison{Trial: other.Trial, Retrieval: other.Retrieval,
		Difference: Round(a.Objective.Value - other.Objective.Value)}
	if f == nil || f.test == nil {
		return c
	}
	i := slices.Index(f.members, [2]string{a.Trial, a.Retrieval})
	j := slices.Index(f.members, [2]string{other.Trial, other.Retrieval})
	if i < 0 || j < 0 {
		return c
	}
	lo, hi := f.test.Interval(i, j, tieAlpha)
	c.IntervalLower, c.IntervalUpper = ptr.To(Round(lo)), ptr.To(Round(hi))
	c.PValue = ptr.To(Round(f.test.P(i, j)))
	return c
}

// candidateEvaluations maps a leaderboard candidate (trial, retrieval) to its live
// Evaluation, for the paired comparisons.
type candidateEvaluations map[[2]string]*ragopsv1alpha1.Evaluation

// compareWithBest compares every candidate with the best at once (familyOf: the max-range
// test over all candidates that pair with the best, so the best picked after the fact and
// every comparison are adjusted for how many were compared) and fills, for the entries on
// the leaderboard and the baseline, VsBest (the difference, its simultaneous interval and
// adjusted p-value) and TiedWithBest (adjusted p-value at least tieAlpha: exactly when the
// interval holds 0). It returns the optimal candidate: the cheapest of the best and the
// leaderboard's entries tied with it (winner.Choose), with its comparisons with the
// baseline and with the strongest other candidate. When a finished Experiment's candidate
// has lost its Evaluation (cleaned up) and the best is the same, every entry and the
// optimal candidate keep what they had, which was adjusted for every candidate; otherwise
// a candidate without its Evaluation keeps its previous comparison while the best is the
// same. collecting is set when a comparison
// waits for per-query results still being stored.
func (r *ExperimentReconciler) compareWithBest(ctx context.Context, exp *ragopsv1alpha1.Experiment, all []ragopsv1alpha1.LeaderboardEntry, evs candidateEvaluations, baseline [2]string) (opt *ragopsv1alpha1.OptimalTrial, collecting bool, err error) {
	if len(all) == 0 {
		return nil, false, nil
	}
	key := func(e ragopsv1alpha1.LeaderboardEntry) [2]string { return [2]string{e.Trial, e.Retrieval} }
	best := all[0]
	prev := map[[2]string]ragopsv1alpha1.LeaderboardEntry{}
	sameBest := false
	if len(exp.Status.Leaderboard) > 0 {
		sameBest = key(exp.Status.Leaderboard[0]) == key(best)
		for _, e := range exp.Status.Leaderboard {
			prev[key(e)] = e
		}
	}
	n := leaderboardSize(exp)
	gone := slices.ContainsFunc(all, func(e ragopsv1alpha1.LeaderboardEntry) bool { return evs[key(e)] == nil })
	if gone && sameBest && exp.Status.CompletionTime != nil && exp.Status.CurrentOptimalTrial != nil {
		for i := range all {
			if old, ok := prev[key(all[i])]; ok {
				all[i].VsBest, all[i].TiedWithBest = old.VsBest, old.TiedWithBest
			}
		}
		return exp.Status.CurrentOptimalTrial.DeepCopy(), false, nil
	}

	cands := make([][2]string, len(all))
	for i, e := range all {
		cands[i] = key(e)
	}
	f, ok, collecting, err := r.familyOf(ctx, objectiveColumn(exp.Spec.Objective), cands, evs)
	fam := &f
	if !ok {
		fam = nil
	}
	for i := 1; i < len(all); i++ {
		e := &all[i]
		if i >= n && key(*e) != baseline {
			continue // off the leaderboard: compared in the test, not listed
		}
		if fam != nil && slices.Contains(fam.members, key(*e)) {
			e.VsBest = comparison(best, *e, fam)
			e.TiedWithBest = !fam.test.Differs(0, slices.Index(fam.members, key(*e)), tieAlpha)
		} else if old, ok := prev[key(*e)]; ok && sameBest && evs[key(*e)] == nil {
			e.VsBest, e.TiedWithBest = old.VsBest, old.TiedWithBest
		}
	}
	w := all[winner.Choose(all[:min(n, len(all))])]
	opt = &ragopsv1alpha1.OptimalTrial{Trial: w.Trial, Retrieval: w.Retrieval, Objective: w.Objective}
	for _, e := range all {
		if key(e) == baseline && key(e) != key(w) {
			opt.VsBaseline = comparison(w, e, fam)
		}
	}
	if len(all) > 1 {
		other := all[0]
		if key(w) == key(other) {
			other = all[1]
		}
		opt.VsRunnerUp = comparison(w, other, fam)
	}
	return opt, collecting, err
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
