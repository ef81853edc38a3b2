package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
)

// Issue 55 item 1: maxRegression 0 refused an identical candidate when both gating
// Evaluations kept per-query results (every paired difference 0: "0.000 [0.000, 0.000] is
// worse than the allowed 0.000") and passed it when they did not (the point comparison of
// the two means): the verdict hung on whether results were stored. Both paths pass it now.
func TestMarginZeroPassesAnIdenticalCandidateOnBothPaths(t *testing.T) {
	// Per-query results of both revisions, identical on each of 300 queries.
	ns := newNamespace(t)
	_, r2 := gateWith(t, ns, 0, querySet(300, gradedRecall), querySet(300, gradedRecall))
	if rev := decided(t, ns, r2); rev.Phase != ragopsv1alpha1.RevisionActive || !strings.Contains(rev.GateMessage, "recall@10 0.000 [0.000, 0.000] is within the allowed 0.000") {
		t.Errorf("paired path: %s %q, want the identical candidate Active, within the allowed 0.000", rev.Phase, rev.GateMessage+" / "+rev.Message)
	}

	// No per-query results: the two means (equal) are compared.
	ns = newNamespace(t)
	gatedFixture(t, ns, nil, ptr.To(0.0))
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	r2, _ = buildRevision(t, ns, "besluiten")
	finishGate(t, gateJob(t, ns, r2), 0.625)
	finishGate(t, gateJob(t, ns, r1), 0.625)
	if rev := decided(t, ns, r2); rev.Phase != ragopsv1alpha1.RevisionActive || !strings.Contains(rev.GateMessage, "is within 0.0000 of the active revision") || !strings.Contains(rev.GateMessage, "point comparison") {
		t.Errorf("point path: %s %q, want the identical candidate Active, within 0.0000 by the point comparison", rev.Phase, rev.GateMessage+" / "+rev.Message)
	}
}

// decided waits for the gate's decision on revision rev of the Index besluiten (Active or
// Rejected) and returns the revision's status.
func decided(t *testing.T, ns, rev string) ragopsv1alpha1.RevisionStatus {
	t.Helper()
	var got ragopsv1alpha1.RevisionStatus
	eventually(t, 30*time.Second, "the gate's decision on "+rev, func() (bool, error) {
		got = revisionStatus(t, ns, rev)
		return got.Phase == ragopsv1alpha1.RevisionActive || got.Phase == ragopsv1alpha1.RevisionRejected, nil
	})
	return got
}

// gateEvents counts the Events of the Index besluiten with reason, by type; a series counts
// its repeats.
func gateEvents(t *testing.T, ns, reason string) (map[string]int32, []string) {
	t.Helper()
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	byType := map[string]int32{}
	var seen []string
	for _, e := range evs.Items {
		if e.Regarding.Kind != "Index" || e.Reason != reason {
			continue
		}
		n := int32(1)
		if e.Series != nil {
			n = e.Series.Count
		}
		byType[e.Type] += n
		seen = append(seen, fmt.Sprintf("%s %s %s ×%d: %s", e.Type, e.Reason, e.Action, n, e.Note))
	}
	return byType, seen
}

// Issue 55 item 7: a single GateFailed decision was recorded three times, once as Normal
// (Ready=False) and twice as Warning (the rollout step's Event and Stalled=True). One
// decision is one Event of one type: a refusal needs a person (Warning), a pass does not
// (Normal). The refusal is made, then undone by a wider maxRegression (the gate decides
// again on the recalls measured, and the candidate takes the alias); the Events are counted
// once the pass's Events are in, emitted a whole decision after the refusal's.
func TestGateDecisionIsOneEvent(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	gatedFixture(t, ns, nil, ptr.To(0.01))
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	r2, _ := buildRevision(t, ns, "besluiten")
	finishGate(t, gateJob(t, ns, r2), 0.30)
	finishGate(t, gateJob(t, ns, r1), 0.90)
	eventually(t, 30*time.Second, "candidate rejected", stalledWith(t, ns, controllers.ReasonGateFailed, "regresses more than 0.0100"))

	ix := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"}}
	if err := env.Client.Patch(ctx, ix, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"rollout":{"gate":{"maxRegression":0.7}}}}`))); err != nil {
		t.Fatal(err)
	}
	waitActive(t, ns, "besluiten", r2)
	eventually(t, 30*time.Second, "the GatePassed and AliasMoved Events of the pass", func() (bool, error) {
		passed, _ := gateEvents(t, ns, controllers.ReasonGatePassed)
		_, moved := gateEvents(t, ns, "AliasMoved")
		return passed[corev1.EventTypeNormal] > 0 && strings.Contains(strings.Join(moved, "\n"), fmt.Sprintf("-> %q", r2)), nil
	})

	failed, seen := gateEvents(t, ns, controllers.ReasonGateFailed)
	if failed[corev1.EventTypeWarning] != 1 || failed[corev1.EventTypeNormal] != 0 {
		t.Errorf("the refusal was recorded as %d Warning and %d Normal Events, want one Warning: %q", failed[corev1.EventTypeWarning], failed[corev1.EventTypeNormal], seen)
	}
	passed, seen := gateEvents(t, ns, controllers.ReasonGatePassed)
	if passed[corev1.EventTypeNormal] != 1 || passed[corev1.EventTypeWarning] != 0 {
		t.Errorf("the pass was recorded as %d Normal and %d Warning Events, want one Normal: %q", passed[corev1.EventTypeNormal], passed[corev1.EventTypeWarning], seen)
	}
}
