package controllers

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/trials"
)

// On a subset where every trial's best variant saturates (spanHit@3 1.0 for all, as make
// demo-experiment's smallest subset gave), the mean over the variants decides, not the
// tokens or the name; a failed screening trial's full trial never goes on, and the baseline
// always does.
func TestScreeningBreaksSaturatedTiesByTheOtherVariants(t *testing.T) {
	r := newScreeningRound(0.1, 1)
	r.add("fixed", ragopsv1alpha1.TrialSucceeded, 100, 0.6, 1, 1)
	r.add("heading", ragopsv1alpha1.TrialSucceeded, 120, 1, 1, 1)
	r.add("broken", ragopsv1alpha1.TrialFailed, 0)
	r.add("semantic", ragopsv1alpha1.TrialSucceeded, 400, 0.4, 1, 1)
	exp, p, statuses := r.exp, r.plan, r.statuses
	out := screen(exp, p, statuses, "semantic")
	if !out.done || len(out.kept) != 2 || out.kept[0] != "heading" || out.kept[1] != "semantic" {
		t.Fatalf("kept %v (done %v), want heading (mean 1.0 beats fixed's 0.87 despite more tokens) and the baseline semantic", out.kept, out.done)
	}
	if v := out.verdict["fixed"]; v == "" || out.verdict["broken"] != "screened out: its screening trial broken-screen did not succeed" {
		t.Errorf("verdicts %q", out.verdict)
	}
	statuses[0].Phase = ragopsv1alpha1.TrialBuilding
	if out := screen(exp, p, statuses, ""); out.done || out.finished != 3 || out.total != 4 {
		t.Errorf("a running screening trial: done %v, %d of %d finished", out.done, out.finished, out.total)
	}
}

func TestScreeningSaysWhenATieDecidedTheCut(t *testing.T) {
	// The whole-corpus run's screening round: fixed-512 and heading-512 scored the same in
	// both retrievals; heading-512-late scored less.
	r := newScreeningRound(0.05, 1)
	r.add("heading", ragopsv1alpha1.TrialSucceeded, 608990, 0.8824, 0.9412)
	r.add("fixed", ragopsv1alpha1.TrialSucceeded, 597474, 0.8824, 0.9412)
	r.add("late", ragopsv1alpha1.TrialSucceeded, 794481, 0.6863, 0.9020)
	exp, p, statuses := r.exp, r.plan, r.statuses
	out := screen(exp, p, statuses, "")
	if len(out.kept) != 1 || out.kept[0] != "fixed" {
		t.Fatalf("kept %v, want fixed (tied, fewer tokens)", out.kept)
	}
	if v, want := out.verdict["heading"], "; tied on both with fixed-screen, which went on for its fewer tokens (597474 against 608990)"; !strings.HasSuffix(v, want) {
		t.Errorf("heading's verdict %q does not end with %q", v, want)
	}
	if v := out.verdict["late"]; strings.Contains(v, "tied") {
		t.Errorf("late's verdict %q names a tie it does not have", v)
	}
	statuses[0].Tokens = 597474
	out = screen(exp, p, statuses, "")
	if v, want := out.verdict["heading"], "; tied on both with fixed-screen and on tokens (597474), decided by name"; len(out.kept) != 1 || out.kept[0] != "fixed" || !strings.HasSuffix(v, want) {
		t.Errorf("kept %v, heading's verdict %q, want fixed kept and a verdict ending with %q", out.kept, v, want)
	}
}

// screeningRound is a screening round's plan and trial statuses, built trial by trial.
type screeningRound struct {
	exp      *ragopsv1alpha1.Experiment
	plan     *trials.Plan
	statuses []ragopsv1alpha1.TrialStatus
}

// newScreeningRound screens with spec.screening {fraction, topN} for SpanHit@3.
func newScreeningRound(fraction float64, topN int32) *screeningRound {
	return &screeningRound{
		exp: &ragopsv1alpha1.Experiment{Spec: ragopsv1alpha1.ExperimentSpec{
			Objective: ragopsv1alpha1.ExperimentObjective{Metric: ragopsv1alpha1.ObjectiveSpanHit, K: 3},
			Screening: &ragopsv1alpha1.ScreeningRound{Fraction: fraction, TopN: topN}}},
		plan: &trials.Plan{},
	}
}

// add appends name's screening trial "<name>-screen" in phase, with its tokens and one
// Evaluation per objective value.
func (r *screeningRound) add(name string, phase ragopsv1alpha1.TrialPhase, tokens int64, objectives ...float64) {
	r.plan.Trials = append(r.plan.Trials, trials.Trial{Name: name + "-screen", Screens: name})
	ts := ragopsv1alpha1.TrialStatus{Name: name + "-screen", Phase: phase, Tokens: tokens, Screening: true}
	for _, o := range objectives {
		ts.Evaluations = append(ts.Evaluations, ragopsv1alpha1.TrialEvaluation{Objective: ptr.To(o)})
	}
	r.statuses = append(r.statuses, ts)
}
