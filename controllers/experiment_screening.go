package controllers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/internal/reconcile"
)

// screeningOutcome is what spec.screening's round decided so far.
type screeningOutcome struct {
	// enabled is set when the Experiment screens.
	enabled bool
	// done is set once every screening trial finished (succeeded, failed or skipped).
	done bool
	// finished and total count the screening trials.
	finished, total int
	// verdict is, once done, why each full trial goes on or not, by full trial name;
	// kept the full trials that go on, best first.
	verdict map[string]string
	kept    []string
}

// screenedTrial is a screening trial's score: its best retrieval variant's objective, and
// the mean over its variants to break ties (a saturated objective, 1.0 for several trials'
// best variant, still tells them apart by the others).
type screenedTrial struct {
	full, name  string
	score, mean float64
	tokens      int64
	ok          bool
}

// screen reads the screening round from the trials' statuses (statuses[i] is p.Trials[i]'s).
// A screening trial scores its best retrieval variant's objective; the spec.screening.topN
// best go on (ties to the higher mean over its variants, then fewer tokens, then the name), and so does the baseline trial (every
// candidate is compared with it) unless its screening trial did not succeed; a failed or
// skipped screening trial's full trial does not.
func screen(exp *ragopsv1alpha1.Experiment, p *trials.Plan, statuses []ragopsv1alpha1.TrialStatus, baseline string) screeningOutcome {
	sc := exp.Spec.Screening
	out := screeningOutcome{enabled: sc != nil}
	if sc == nil {
		return out
	}
	var scored []screenedTrial
	for i := range p.Trials {
		t, ts := &p.Trials[i], &statuses[i]
		if t.Screens == "" {
			continue
		}
		out.total++
		if ts.Phase != ragopsv1alpha1.TrialSucceeded && ts.Phase != ragopsv1alpha1.TrialFailed && ts.Phase != ragopsv1alpha1.TrialSkipped {
			continue
		}
		out.finished++
		st := screenedTrial{full: t.Screens, name: t.Name, tokens: ts.Tokens, ok: ts.Phase == ragopsv1alpha1.TrialSucceeded}
		n := 0
		for _, e := range ts.Evaluations {
			if e.Objective == nil {
				continue
			}
			st.score = max(st.score, *e.Objective)
			st.mean += *e.Objective
			n++
		}
		if n > 0 {
			st.mean /= float64(n)
		}
		scored = append(scored, st)
	}
	out.done = out.finished == out.total
	if !out.done {
		return out
	}
	slices.SortStableFunc(scored, func(a, b screenedTrial) int {
		if a.ok != b.ok {
			if a.ok {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.mean, a.mean); c != 0 {
			return c
		}
		if c := cmp.Compare(a.tokens, b.tokens); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	topN := int(max(sc.TopN, 1))
	out.verdict = map[string]string{}
	metric := fmt.Sprintf("%s@%d", exp.Spec.Objective.Metric, exp.Spec.Objective.K)
	for rank, st := range scored {
		switch {
		case !st.ok:
			out.verdict[st.full] = fmt.Sprintf("screened out: its screening trial %s did not succeed", st.name)
		case rank < topN || st.full == baseline:
			out.kept = append(out.kept, st.full)
			out.verdict[st.full] = ""
		default:
			out.verdict[st.full] = fmt.Sprintf("screened out: its screening trial %s ranked %d of %d on the subset (%s %.4f, mean over its retrievals %.4f); spec.screening.topN %d go on",
				st.name, rank+1, len(scored), metric, st.score, st.mean, topN) + tieAtTheCut(st, scored[topN-1])
		}
	}
	return out
}

// tieAtTheCut says, for a screened-out trial st whose score and mean equal those of last,
// the last screening trial inside spec.screening.topN, what decided between them (the
// subset cannot tell them apart; raising topN builds both); "" when they differ.
func tieAtTheCut(st, last screenedTrial) string {
	if !last.ok || st.score != last.score || st.mean != last.mean {
		return ""
	}
	if st.tokens != last.tokens {
		return fmt.Sprintf("; tied on both with %s, which went on for its fewer tokens (%d against %d)", last.name, last.tokens, st.tokens)
	}
	return fmt.Sprintf("; tied on both with %s and on tokens (%d), decided by name", last.name, st.tokens)
}

// condition is the Screened condition the outcome calls for (removed without screening).
func (o screeningOutcome) condition(exp *ragopsv1alpha1.Experiment) reconcile.Result {
	switch {
	case !o.enabled:
		return reconcile.Proceed.Remove(ragopsv1alpha1.ConditionScreened)
	case !o.done:
		return reconcile.Proceed.Set(ragopsv1alpha1.ConditionScreened, metav1.ConditionFalse, ragopsv1alpha1.ReasonScreening,
			fmt.Sprintf("%d of %d screening trials finished on the subset (every judged document and %.3g of the others, seed %d)",
				o.finished, o.total, exp.Spec.Screening.Fraction, exp.Spec.Screening.Seed))
	}
	kept := "none"
	if len(o.kept) > 0 {
		kept = strings.Join(o.kept, ", ")
	}
	return reconcile.Proceed.Set(ragopsv1alpha1.ConditionScreened, metav1.ConditionTrue, ragopsv1alpha1.ReasonScreeningDone,
		fmt.Sprintf("%d of %d trials go on to a full build: %s", len(o.kept), o.total, kept))
}
