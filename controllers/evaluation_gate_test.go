package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
)

// gateWith plays an Index's first revision to Active and a second one (a new chunk size) to
// its gate, whose gating Evaluations log the per-query results active and candidate; it
// returns the candidate revision.
func gateWith(t *testing.T, ns string, maxRegression float64, active, candidate *results.Set) (r1, r2 string) {
	t.Helper()
	gatedFixture(t, ns, nil, ptr.To(maxRegression))
	r1, _ = buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	r2, _ = buildRevision(t, ns, "besluiten")
	finishWithResults(t, gateJob(t, ns, r2), "besluiten-gate-"+r2, candidate)
	finishWithResults(t, gateJob(t, ns, r1), "besluiten-gate-"+r1, active)
	return r1, r2
}

// revisionStatus returns revision name of the Index besluiten.
func revisionStatus(t *testing.T, ns, name string) ragopsv1alpha1.RevisionStatus {
	t.Helper()
	for _, r := range getIndex(t, ns, "besluiten").Status.Revisions {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no revision %s", name)
	return ragopsv1alpha1.RevisionStatus{}
}

// gradedRecall is an active revision's recall@10 over the gate queries: 0.25, 0.5, 0.75, 1
// in turn.
func gradedRecall(i int) float64 { return float64(i%4+1) / 4 }

// 300 queries on which the candidate differs from the active revision on a few, in both
// directions (eight better, eight worse by 0.25): the paired interval is narrow around 0 and
// the candidate passes maxRegression 0.02, which the status and a GatePassed Event say with
// the interval.
func TestNonInferiorityGatePassesSmallTwoWayDifferences(t *testing.T) {
	ns := newNamespace(t)
	cand := func(i int) float64 {
		switch {
		case i%40 == 1: // recall 0.5 -> 0.75
			return gradedRecall(i) + 0.25
		case i%40 == 2: // recall 0.75 -> 0.5
			return gradedRecall(i) - 0.25
		}
		return gradedRecall(i)
	}
	_, r2 := gateWith(t, ns, 0.02, querySet(300, gradedRecall), querySet(300, cand))
	waitActive(t, ns, "besluiten", r2)
	msg := revisionStatus(t, ns, r2).GateMessage
	t.Logf("passed: %s", msg)
	for _, want := range []string{"paired over 300 gate queries at 0.95 confidence", "recall@10 0.000 [", "is within the allowed \u22120.020"} {
		if !strings.Contains(msg, want) {
			t.Errorf("gateMessage %q does not say %q", msg, want)
		}
	}
	eventually(t, 30*time.Second, "a GatePassed Event with the decision", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == controllers.ReasonGatePassed && e.Type == corev1.EventTypeNormal && e.Note == msg {
				return true, nil
			}
		}
		return false, nil
	})
}

// The candidate is worse by 0.03 on average over 300 queries (by 0.08 and better by 0.02
// in turn): the whole interval is below -maxRegression 0.02 and the candidate is Rejected as
// worse, not for lack of evidence, and the alias stays.
func TestNonInferiorityGateRefusesASystematicLoss(t *testing.T) {
	ns := newNamespace(t)
	base := func(i int) float64 { return float64(i%3+1) / 4 } // 0.25, 0.5, 0.75
	cand := func(i int) float64 {
		if i%2 == 0 {
			return base(i) - 0.08
		}
		return base(i) + 0.02
	}
	active, candidate := querySet(300, base), querySet(300, cand)
	r1, r2 := gateWith(t, ns, 0.02, active, candidate)
	eventually(t, 30*time.Second, "candidate rejected as worse", stalledWith(t, ns, controllers.ReasonGateFailed, "is worse than the allowed \u22120.020"))
	_, a, _ := active.Column("recall@10")
	_, c, _ := candidate.Column("recall@10")
	d, _ := stats.Differences(c, a)
	if m := stats.Mean(d); m > -0.029 || m < -0.031 {
		t.Fatalf("the played candidate is %v worse, want about 0.03", m)
	}
	rev := revisionStatus(t, ns, r2)
	t.Logf("refused: %s", rev.Message)
	if rev.Phase != ragopsv1alpha1.RevisionRejected || strings.Contains(rev.Message, "lack of evidence") || !strings.Contains(rev.Message, "paired over 300 gate queries") {
		t.Errorf("candidate %s: phase %s message %q, want Rejected as worse over 300 paired queries", r2, rev.Phase, rev.Message)
	}
	if got := getIndex(t, ns, "besluiten").Status.ActiveRevision; got != r1 {
		t.Errorf("active revision %s, want %s", got, r1)
	}
}

// 35 gate queries (the demo's): the candidate loses one query more than it wins (mean
// -0.029, within maxRegression 0.05), but one query is 0.029 and the interval reaches far
// past the margin: refused for lack of evidence, with the number of queries this margin
// needs at the observed variance.
func TestNonInferiorityGateSaysTheEvidenceIsThin(t *testing.T) {
	ns := newNamespace(t)
	active := func(i int) float64 {
		if i < 3 {
			return float64(1 - i/2) // 1, 1, 0
		}
		return gradedRecall(i)
	}
	cand := func(i int) float64 {
		if i < 3 {
			return float64(i / 2) // 0, 0, 1: two queries lost, one won
		}
		return gradedRecall(i)
	}
	a, c := querySet(35, active), querySet(35, cand)
	_, r2 := gateWith(t, ns, 0.05, a, c)
	eventually(t, 30*time.Second, "candidate refused for lack of evidence", stalledWith(t, ns, controllers.ReasonGateFailed, "refused for lack of evidence, not for being worse"))
	_, av, _ := a.Column("recall@10")
	_, cv, _ := c.Column("recall@10")
	d, _ := stats.Differences(cv, av)
	need := stats.QueriesForMargin(stats.StdDev(d), stats.Mean(d)+0.05, 0.95)
	msg := revisionStatus(t, ns, r2).Message
	for _, want := range []string{"recall@10 \u22120.029 [", "35 queries are too few to tell", fmt.Sprintf("this margin needs about %d", need)} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if need <= 35 {
		t.Errorf("queries needed %d, want more than the 35 played", need)
	}
	t.Logf("35 queries, mean difference %.4f: %s", stats.Mean(d), msg)
}
