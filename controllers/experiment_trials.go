package controllers

// The steps of an Experiment reconcile that run its trials: readTrials reads every trial's
// phase from its children and counts what the trials hold (trialLedger); estimateTrials gets
// the estimate Job's figures; startTrials starts the pending trials that parallelism, the
// failure limit, screening and the budget allow (admitTrial decides one); rankTrials writes
// the counts, the budget and the leaderboard, summarizes, and cleans up a Stalled
// Experiment's trials (spec.cleanup) once none runs.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/internal/reconcile"
)

// trialLedger is what the trials hold of the Experiment's limits: tokens spent by builds
// (dropped trials' included) and reserved by running ones (their estimates), builds running,
// full trials started (budget.maxTrials), trials failed (spec.maxFailedTrials).
type trialLedger struct {
	spent, reserved           int64
	building, started, failed int
}

// add counts one trial's status.
func (l *trialLedger) add(ts ragopsv1alpha1.TrialStatus) {
	l.spent += ts.Tokens
	switch ts.Phase {
	case ragopsv1alpha1.TrialBuilding:
		l.building++
		l.reserved += ts.EstimatedTokens
	case ragopsv1alpha1.TrialFailed:
		l.failed++
	}
	if ts.Phase != ragopsv1alpha1.TrialPending && ts.Phase != ragopsv1alpha1.TrialSkipped && !ts.Screening {
		l.started++
	}
}

// start counts a trial startTrials starts.
func (l *trialLedger) start(ts ragopsv1alpha1.TrialStatus) {
	l.building++
	if !ts.Screening {
		l.started++
	}
	l.reserved += ts.EstimatedTokens
}

// trialLimits are the spec's limits on starting trials: budget.maxTokens (nil: none),
// budget.maxTrials (-1: none), parallelism (at least 1), and whether spec.maxFailedTrials is
// passed (then no trial starts).
type trialLimits struct {
	maxTokens     *int64
	maxTrials     int
	parallelism   int
	tooManyFailed bool
}

// limitsOf reads exp's limits given the failed trials counted.
func limitsOf(exp *ragopsv1alpha1.Experiment, failed int) trialLimits {
	l := trialLimits{maxTrials: -1, parallelism: int(max(exp.Spec.Parallelism, 1)), tooManyFailed: failed > int(exp.Spec.MaxFailedTrials)}
	if b := exp.Spec.Budget; b != nil {
		l.maxTokens = b.MaxTokens
		if b.MaxTrials != nil {
			l.maxTrials = int(*b.MaxTrials)
		}
	}
	return l
}

// readTrials reads every trial's phase and figures from its children (a finished trial
// whose children were cleaned up keeps its recorded status; estimates carry over while the
// revision holds), brings the live trials' children to the plan, keeps the dropped trials
// that spent tokens, and counts the ledger and the limits.
func (r *ExperimentReconciler) readTrials(ctx context.Context, st *experimentState) (reconcile.Result, error) {
	exp, p, ch := st.exp, st.plan, st.children
	prev := map[string]ragopsv1alpha1.TrialStatus{}
	for _, ts := range exp.Status.Trials {
		prev[ts.Name] = ts
	}
	st.statuses = make([]ragopsv1alpha1.TrialStatus, len(p.Trials))
	for i := range p.Trials {
		t := &p.Trials[i]
		ts := trialStatus(t, ch, exp.Spec.Objective)
		if old, ok := prev[t.Name]; ok && old.Revision == t.Revision {
			ts.EstimatedTokens, ts.EstimateSampleDocuments, ts.EstimateError = old.EstimatedTokens, old.EstimateSampleDocuments, old.EstimateError
			if _, live := ch.indexes[t.Name]; !live && (old.Phase == ragopsv1alpha1.TrialSucceeded || old.Phase == ragopsv1alpha1.TrialFailed) {
				ts = old // finished, its children cleaned up: the status is all that is left
			}
		}
		if _, live := ch.indexes[t.Name]; live {
			if err := r.ensureTrial(ctx, exp, t, ch); err != nil && !st.conflicted(err, &ts) {
				return reconcile.Stop, err
			}
		}
		st.statuses[i] = ts
		st.ledger.add(ts)
	}
	st.dropped = droppedTrials(exp, p)
	for _, d := range st.dropped {
		st.ledger.spent += d.Tokens
	}
	st.limits = limitsOf(exp, st.ledger.failed)
	return reconcile.Proceed, nil
}

// droppedTrials are the recorded trials no longer in the plan whose builds spent tokens:
// they still count against the budget, Skipped.
func droppedTrials(exp *ragopsv1alpha1.Experiment, p *trials.Plan) []ragopsv1alpha1.TrialStatus {
	inPlan := map[string]bool{}
	for _, t := range p.Trials {
		inPlan[t.Name] = true
	}
	var dropped []ragopsv1alpha1.TrialStatus
	for _, old := range exp.Status.Trials {
		if !inPlan[old.Name] && old.Tokens > 0 {
			old.Phase = ragopsv1alpha1.TrialSkipped
			if !strings.HasPrefix(old.Message, droppedMessage) {
				old.Message = droppedMessage + "; its build's tokens still count against the budget"
			}
			dropped = append(dropped, old)
		}
	}
	return dropped
}

// estimateTrials gets the pending trials' estimates from an estimate Job where the operator
// cannot read the Corpus (jobEstimates); only under budget.maxTokens and while trials may
// start.
func (r *ExperimentReconciler) estimateTrials(ctx context.Context, st *experimentState) (reconcile.Result, error) {
	if st.limits.maxTokens == nil || st.limits.tooManyFailed {
		return reconcile.Proceed, nil
	}
	var err error
	st.waitEstimate, err = r.jobEstimates(ctx, st.exp, &st.corpus, st.plan, st.statuses)
	if err != nil {
		return reconcile.Stop, err
	}
	return reconcile.Proceed, nil
}

// startTrials reads the screening round and starts, in plan order, the pending trials
// admitTrial admits.
func (r *ExperimentReconciler) startTrials(ctx context.Context, st *experimentState) (reconcile.Result, error) {
	bt, _ := baselineCandidate(st.exp, st.plan)
	st.screening = screen(st.exp, st.plan, st.statuses, bt)
	if st.limits.tooManyFailed {
		return reconcile.Proceed, nil
	}
	for i := range st.plan.Trials {
		ts, t := &st.statuses[i], &st.plan.Trials[i]
		if ts.Phase != ragopsv1alpha1.TrialPending {
			continue
		}
		start, estErr := r.admitTrial(ctx, st, t, ts)
		if !start {
			continue
		}
		if err := r.ensureTrial(ctx, st.exp, t, st.children); err != nil {
			if st.conflicted(err, ts) {
				continue
			}
			return reconcile.Stop, err
		}
		ts.Phase, ts.Message = ragopsv1alpha1.TrialBuilding, ""
		if estErr != nil {
			ts.Message = fmt.Sprintf("started without a token estimate: %v", estErr)
		}
		st.ledger.start(*ts)
	}
	return reconcile.Proceed, nil
}

// conflicted records a *childConflictError on the trial's message and in st.conflicts, and
// reports whether err was one.
func (st *experimentState) conflicted(err error, ts *ragopsv1alpha1.TrialStatus) bool {
	var c *childConflictError
	if !errors.As(err, &c) {
		return false
	}
	ts.Message = c.Error()
	st.conflicts = append(st.conflicts, c.Error())
	return true
}

// admitTrial decides whether the pending trial t starts now: screening, budget.maxTrials,
// parallelism, its estimate and budget.maxTokens. A trial that does not start gets the
// message saying what it waits for, or is Skipped (the budget's in st.exhausted). estErr is
// why it has no estimate, for a trial that starts without one.
func (r *ExperimentReconciler) admitTrial(ctx context.Context, st *experimentState, t *trials.Trial, ts *ragopsv1alpha1.TrialStatus) (start bool, estErr error) {
	lim, l, scr := st.limits, &st.ledger, st.screening
	if t.ScreenedBy != "" {
		if !scr.done {
			ts.Message = fmt.Sprintf("waiting for the screening round (%d of %d screening trials finished)", scr.finished, scr.total)
			return false, nil
		}
		if v := scr.verdict[t.Name]; v != "" {
			ts.Phase, ts.Message = ragopsv1alpha1.TrialSkipped, v
			return false, nil
		}
	}
	if lim.maxTrials >= 0 && l.started >= lim.maxTrials && !ts.Screening {
		ts.Phase = ragopsv1alpha1.TrialSkipped
		ts.Message = fmt.Sprintf("trial %s not started: budget.maxTrials %d trials were started", ts.Name, lim.maxTrials)
		st.exhausted = append(st.exhausted, ts.Message)
		return false, nil
	}
	if l.building >= lim.parallelism {
		return false, nil
	}
	if st.waitEstimate != "" && ts.EstimateSampleDocuments == 0 && ts.EstimateError == "" {
		ts.Message = st.waitEstimate
		return false, nil
	}
	est, estErr := r.estimate(ctx, st.exp, &st.corpus, t, ts)
	if estErr != nil && ts.EstimateError != "" {
		estErr = fmt.Errorf("%w: %s", ErrNoEstimate, ts.EstimateError)
	}
	if lim.maxTokens == nil {
		return true, estErr
	}
	switch {
	case estErr == nil:
		d := budget.Check(t.Name, lim.maxTokens, l.spent, l.reserved, est)
		if d.Fits {
			return true, nil
		}
		if l.reserved > 0 {
			ts.Message = "waiting for the running builds' token counts: " + d.Message()
			return false, nil
		}
		ts.Phase, ts.Message = ragopsv1alpha1.TrialSkipped, d.Message()
		st.exhausted = append(st.exhausted, d.Message())
		return false, nil
	case l.spent+l.reserved >= *lim.maxTokens:
		ts.Phase = ragopsv1alpha1.TrialSkipped
		ts.Message = fmt.Sprintf("trial %s not started: %d of the budget's %d tokens are spent or held and it has no estimate (%v)", t.Name, l.spent+l.reserved, *lim.maxTokens, estErr)
		st.exhausted = append(st.exhausted, ts.Message)
		return false, nil
	case l.building > 0:
		// Without an estimate nothing bounds what it holds: it runs alone, so the budget is
		// passed by one trial at most.
		ts.Message = fmt.Sprintf("waiting for the running builds: it has no token estimate (%v) and runs alone", estErr)
		return false, nil
	}
	return true, estErr
}

// rankTrials writes the trials, their counts and the budget into the status, ranks the
// candidates (leaderboard) and summarizes: the Screened condition, BudgetExhausted, and
// Ready, Reconciling or Stalled (summarizeExperiment).
func (r *ExperimentReconciler) rankTrials(ctx context.Context, st *experimentState) (reconcile.Result, error) {
	exp := st.exp
	exp.Status.Trials = append(st.statuses, st.dropped...)
	exp.Status.TrialCounts = countTrials(st.statuses)
	exp.Status.Budget = budgetStatus(st.limits.maxTokens, st.ledger.spent, st.ledger.reserved)
	board, opt, collecting, err := r.leaderboard(ctx, exp, st.plan, st.statuses, st.children)
	if err != nil {
		log.FromContext(ctx).Info("paired comparisons incomplete; retrying", "error", err.Error())
	}
	exp.Status.Leaderboard, exp.Status.CurrentOptimalTrial = board, opt
	exp.Status.Progress = progress(exp.Status.TrialCounts)
	res := st.screening.condition(exp).Merge(summarizeExperiment(exp, st.limits.tooManyFailed, collecting || err != nil, st.exhausted))
	if err != nil {
		res = res.Requeue(comparisonRetry)
	}
	if len(st.conflicts) > 0 {
		msg := st.conflicts[0]
		if len(st.conflicts) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(st.conflicts)-1)
		}
		exp.Status.CompletionTime = nil
		res = res.Merge(reconcile.Stalled(ReasonChildConflict, msg))
	}
	if c := exp.Status.TrialCounts; st.limits.tooManyFailed && c.Building+c.Evaluating == 0 {
		// Stalled with nothing running: no trial starts until a person raises
		// spec.maxFailedTrials, so the trials' collections and servers go as when done (the
		// generated strategies stay: the space still names them).
		if _, err := r.cleanupTrials(ctx, exp, st.children); err != nil {
			return reconcile.Stop, err
		}
	}
	return res, nil
}
