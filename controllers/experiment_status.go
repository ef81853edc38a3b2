package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/reconcile"
)

// RankCandidates orders leaderboard candidates best first, in place. It ranks by the point
// objective (the Evaluation's mean, 4 decimals); ties go to fewer tokens, then to the trial
// and retrieval names, so the order is total and the same on every reconcile. Whether a
// rank is evidence is the adjusted comparison's to say (LeaderboardEntry.VsBest and
// TiedWithBest, see compareWithBest).
func RankCandidates(entries []ragopsv1alpha1.LeaderboardEntry) {
	slices.SortStableFunc(entries, func(a, b ragopsv1alpha1.LeaderboardEntry) int {
		if c := cmp.Compare(b.Objective.Value, a.Objective.Value); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Tokens, b.Tokens); c != 0 {
			return c
		}
		if c := strings.Compare(a.Trial, b.Trial); c != 0 {
			return c
		}
		return strings.Compare(a.Retrieval, b.Retrieval)
	})
}

// leaderboardSize is spec.leaderboardSize, 10 when unset.
func leaderboardSize(exp *ragopsv1alpha1.Experiment) int {
	if n := int(exp.Spec.LeaderboardSize); n > 0 {
		return n
	}
	return 10
}

// rankCandidates ranks every measured candidate (trial x retrieval variant) with its
// objective's interval, and returns them with their live Evaluations and the baseline
// candidate (trial, retrieval). Candidates whose Evaluations were cleaned up keep their
// previous entry's figures.
func rankCandidates(exp *ragopsv1alpha1.Experiment, p *trials.Plan, statuses []ragopsv1alpha1.TrialStatus, ch *experimentChildren) (all []ragopsv1alpha1.LeaderboardEntry, evs candidateEvaluations, baseline [2]string) {
	obj := exp.Spec.Objective
	prev := map[[2]string]ragopsv1alpha1.LeaderboardEntry{}
	for _, e := range exp.Status.Leaderboard {
		prev[[2]string{e.Trial, e.Retrieval}] = e
	}
	retrievals := map[string]trials.Retrieval{}
	for _, rv := range p.Retrievals {
		retrievals[rv.Name] = rv
	}
	evs = candidateEvaluations{}
	for _, ts := range statuses {
		if ts.Screening {
			continue // a subset's figures are not comparable with full builds'
		}
		for _, te := range ts.Evaluations {
			if te.Objective == nil {
				continue
			}
			key := [2]string{ts.Name, te.Retrieval}
			e := ragopsv1alpha1.LeaderboardEntry{Trial: ts.Name, Retrieval: te.Retrieval, Parameters: candidateParameters(ts, retrievals[te.Retrieval]),
				Objective: ragopsv1alpha1.ObjectiveValue{Value: *te.Objective},
				Tokens:    ts.Tokens, Chunks: ts.Chunks, StorageBytes: ts.StorageBytes, BuildSeconds: ts.BuildSeconds}
			if ev, m := evaluationOf(ch, ts, te, obj.K); ev != nil {
				e.Metrics = m.at.DeepCopy()
				e.Objective.Queries = m.queries
				e.Objective = withInterval(e.Objective, m.at, obj.Metric)
				evs[key] = ev
			} else if old, ok := prev[key]; ok {
				e.Metrics, e.Objective = old.Metrics, old.Objective
			}
			all = append(all, e)
		}
	}
	RankCandidates(all)
	for i := range all {
		all[i].Rank = int32(i + 1)
	}
	bt, br := baselineCandidate(exp, p)
	return all, evs, [2]string{bt, br}
}

// leaderboard ranks the candidates (rankCandidates), compares the best with the others
// (compareWithBest) and returns the top spec.leaderboardSize and the optimal candidate (the
// cheapest of those tied with the best).
// collecting is set while a comparison waits for per-query results being stored. Errors:
// transient reads of per-query results (the figures are complete but for the comparisons
// that failed).
func (r *ExperimentReconciler) leaderboard(ctx context.Context, exp *ragopsv1alpha1.Experiment, p *trials.Plan, statuses []ragopsv1alpha1.TrialStatus, ch *experimentChildren) (board []ragopsv1alpha1.LeaderboardEntry, opt *ragopsv1alpha1.OptimalTrial, collecting bool, err error) {
	all, evs, baseline := rankCandidates(exp, p, statuses, ch)
	if len(all) == 0 {
		return nil, nil, false, nil
	}
	opt, collecting, err = r.compareWithBest(ctx, exp, all, evs, baseline)
	return all[:min(leaderboardSize(exp), len(all))], opt, collecting, err
}

// candidateParameters are a trial's parameters plus the retrieval variant's.
func candidateParameters(ts ragopsv1alpha1.TrialStatus, rv trials.Retrieval) map[string]string {
	out := make(map[string]string, len(ts.Parameters)+3)
	for k, v := range ts.Parameters {
		out[k] = v
	}
	if rv.Name == "" {
		return out
	}
	out["mode"] = string(rv.Mode)
	if h := rv.Hybrid; h != nil {
		if h.Alpha != nil {
			out["alpha"] = strconv.FormatFloat(*h.Alpha, 'f', -1, 64)
		}
		out["fusion"] = string(h.Fusion)
	}
	return out
}

// baselineCandidate names the baseline's trial and retrieval variant: spec.baseline, or the
// space's first strategy, model and variant. The trial is "" when the baseline's (strategy,
// model) is not among the chosen trials.
func baselineCandidate(exp *ragopsv1alpha1.Experiment, p *trials.Plan) (trial, retrieval string) {
	var strategy, model string
	if combos, _ := trials.Strategies(&exp.Spec.Space); len(combos) > 0 {
		strategy = combos[0].Name
	}
	if len(exp.Spec.Space.Models) > 0 {
		model = exp.Spec.Space.Models[0].Name
	}
	if len(p.Retrievals) > 0 {
		retrieval = p.Retrievals[0].Name
	}
	if b := exp.Spec.Baseline; b != nil {
		strategy = b.Strategy
		if b.Model != "" {
			model = b.Model
		}
		if b.Retrieval != "" {
			retrieval = b.Retrieval
		}
	}
	for _, t := range p.Trials {
		if t.Screens == "" && t.Model.Name == model && (t.Strategy.Name == strategy || slices.Contains(t.Merged, strategy)) {
			return t.Name, retrieval
		}
	}
	return "", retrieval
}

// baselineTrial is the baseline's trial as the status records it (the optimal trial's
// comparison names it), for the cleanup.
func baselineTrial(exp *ragopsv1alpha1.Experiment, _ []ragopsv1alpha1.TrialStatus) string {
	if o := exp.Status.CurrentOptimalTrial; o != nil && o.VsBaseline != nil {
		return o.VsBaseline.Trial
	}
	return ""
}

func countTrials(statuses []ragopsv1alpha1.TrialStatus) ragopsv1alpha1.TrialCounts {
	c := ragopsv1alpha1.TrialCounts{Total: int32(len(statuses))}
	for _, ts := range statuses {
		switch ts.Phase {
		case ragopsv1alpha1.TrialPending:
			c.Pending++
		case ragopsv1alpha1.TrialBuilding:
			c.Building++
		case ragopsv1alpha1.TrialEvaluating:
			c.Evaluating++
		case ragopsv1alpha1.TrialSucceeded:
			c.Succeeded++
		case ragopsv1alpha1.TrialFailed:
			c.Failed++
		case ragopsv1alpha1.TrialSkipped:
			c.Skipped++
		}
	}
	return c
}

// progress is the TRIALS column: finished (succeeded, failed or skipped) of total, e.g.
// "5/12 (1 failed, 2 skipped)".
func progress(c ragopsv1alpha1.TrialCounts) string {
	s := fmt.Sprintf("%d/%d", c.Succeeded+c.Failed+c.Skipped, c.Total)
	var extra []string
	if c.Failed > 0 {
		extra = append(extra, fmt.Sprintf("%d failed", c.Failed))
	}
	if c.Skipped > 0 {
		extra = append(extra, fmt.Sprintf("%d skipped", c.Skipped))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func budgetStatus(maxTokens *int64, spent, reserved int64) ragopsv1alpha1.BudgetStatus {
	b := ragopsv1alpha1.BudgetStatus{TokensSpent: spent, TokensReserved: reserved, Display: humanTokens(spent)}
	if maxTokens != nil {
		b.MaxTokens = ptr.To(*maxTokens)
		b.Display += "/" + humanTokens(*maxTokens)
	}
	return b
}

// humanTokens writes n as 950, 12.5k or 1.2M.
func humanTokens(n int64) string {
	f := func(v float64, unit string) string {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + unit
	}
	switch {
	case n >= 1_000_000:
		return f(float64(n)/1e6, "M")
	case n >= 1_000:
		return f(float64(n)/1e3, "k")
	}
	return strconv.FormatInt(n, 10)
}

// summarizeExperiment sets BudgetExhausted and the completion time, and returns the outcome
// the trials' counts call for: Stalled past spec.maxFailedTrials, Ready when every trial is
// done, else Reconciling with Ready=False.
func summarizeExperiment(exp *ragopsv1alpha1.Experiment, tooManyFailed, comparing bool, exhausted []string) reconcile.Result {
	c := exp.Status.TrialCounts
	var budget reconcile.Result
	switch {
	case len(exhausted) > 0:
		msg := exhausted[0]
		if len(exhausted) > 1 {
			msg += fmt.Sprintf(" (%d more trials not started)", len(exhausted)-1)
		}
		budget = budget.Set(ragopsv1alpha1.ConditionBudgetExhausted, metav1.ConditionTrue, ragopsv1alpha1.ReasonBudgetExhausted, msg)
	case exp.Spec.Budget != nil:
		budget = budget.Set(ragopsv1alpha1.ConditionBudgetExhausted, metav1.ConditionFalse, ReasonWithinBudget,
			fmt.Sprintf("%s tokens spent, %s held by running trials", exp.Status.Budget.Display, humanTokens(exp.Status.Budget.TokensReserved)))
	default:
		budget = budget.Remove(ragopsv1alpha1.ConditionBudgetExhausted)
	}
	running := c.Building + c.Evaluating
	switch {
	case tooManyFailed:
		var names []string
		for _, ts := range exp.Status.Trials {
			if ts.Phase == ragopsv1alpha1.TrialFailed {
				names = append(names, ts.Name)
			}
		}
		exp.Status.CompletionTime = nil
		return budget.Merge(reconcile.Stalled(ragopsv1alpha1.ReasonTooManyFailedTrials,
			fmt.Sprintf("%d trials failed, more than spec.maxFailedTrials %d (%s); no further trial starts, %d still running",
				c.Failed, exp.Spec.MaxFailedTrials, strings.Join(names, ", "), running)))
	case running+c.Pending == 0 && comparing:
		exp.Status.CompletionTime = nil
		return budget.Merge(reconcile.StopFor(comparisonRetry).With(reconcile.OutcomeReconciling, conditions.ReasonProgressing,
			fmt.Sprintf("%d trials done; the paired comparisons wait for per-query results being stored", c.Total)))
	case running+c.Pending == 0:
		if exp.Status.CompletionTime == nil {
			exp.Status.CompletionTime = ptr.To(metav1.Now())
		}
		msg := fmt.Sprintf("%d trials done (%d succeeded, %d failed, %d skipped)", c.Total, c.Succeeded, c.Failed, c.Skipped)
		if o := exp.Status.CurrentOptimalTrial; o != nil {
			msg += fmt.Sprintf("; winner %s/%s %s@%d %.4f", o.Trial, o.Retrieval, exp.Spec.Objective.Metric, exp.Spec.Objective.K, o.Objective.Value)
			if lb := exp.Status.Leaderboard; len(lb) > 0 && (lb[0].Trial != o.Trial || lb[0].Retrieval != o.Retrieval) {
				msg += fmt.Sprintf(", the cheapest of the candidates tied with the best %s/%s %.4f", lb[0].Trial, lb[0].Retrieval, lb[0].Objective.Value)
			}
		}
		return budget.Merge(reconcile.Stop.With(reconcile.OutcomeReady, ReasonExperimentDone, msg))
	default:
		exp.Status.CompletionTime = nil
		return budget.Merge(reconcile.Stop.With(reconcile.OutcomeReconciling, conditions.ReasonProgressing,
			fmt.Sprintf("%s trials done; %d building, %d evaluating, %d pending", exp.Status.Progress, c.Building, c.Evaluating, c.Pending)))
	}
}
