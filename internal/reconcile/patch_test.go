package reconcile

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

type recorded []string

func (r *recorded) Eventf(_, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	*r = append(*r, fmt.Sprintf("%s %s %s: %s", eventtype, reason, action, fmt.Sprintf(note, args...)))
}

// Issue 55 item 7: one decision, one Event, one type. A gate's refusal was three Events:
// the rollout step's Warning GateFailed, and one per condition its Stalled outcome set
// (Stalled=True as Warning, Ready=False as Normal). The conditions an outcome sets are one
// Event (Warning when one of them needs a person), and none beside a step's Event of the
// same reason; a transition that needs a person is never dropped for a held Normal one.
func TestOneDecisionIsOneEvent(t *testing.T) {
	stalledNeedsAPerson := func(c metav1.Condition) bool {
		return c.Type == ragopsv1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue
	}
	idx := &ragopsv1alpha1.Index{}
	p := NewStatusPatcher(idx, stalledNeedsAPerson)
	before := []metav1.Condition{
		{Type: ragopsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Active", Message: "serving"},
		{Type: ragopsv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "Gating", Message: "waits"},
	}
	obj := &ragopsv1alpha1.Index{}
	obj.Status.Conditions = append([]metav1.Condition(nil), before...)
	Summarize(obj, Stalled("GateFailed", "revision r2 is worse; alias stays"))

	var rec recorded
	p.emitTransitions(&rec, obj, before, obj.Status.Conditions)
	if want := []string{"Warning GateFailed Stalled=True: revision r2 is worse; alias stays"}; fmt.Sprint(rec) != fmt.Sprint(want) {
		t.Errorf("the Stalled outcome's transitions: %q, want %q", rec, want)
	}

	// Beside the step's own Warning GateFailed, the transitions add nothing.
	rec = nil
	held := &EventBuffer{}
	held.Eventf(obj, nil, corev1.EventTypeWarning, "GateFailed", "Rollout", "revision r2 is worse; alias stays")
	p.emitTransitions(held.Besides(&rec), obj, before, obj.Status.Conditions)
	held.Flush(&rec)
	if want := []string{"Warning GateFailed Rollout: revision r2 is worse; alias stays"}; fmt.Sprint(rec) != fmt.Sprint(want) {
		t.Errorf("a step's decision and its transitions: %q, want %q", rec, want)
	}

	// A held Normal Event of the same reason does not hide a Warning transition; it does hide
	// a Normal one; other reasons pass.
	rec = nil
	held = &EventBuffer{}
	held.Eventf(obj, nil, corev1.EventTypeNormal, "GateFailed", "Rollout", "noted")
	r := held.Besides(&rec)
	r.Eventf(obj, nil, corev1.EventTypeWarning, "GateFailed", "Stalled=True", "needs a person")
	r.Eventf(obj, nil, corev1.EventTypeNormal, "GateFailed", "Ready=False", "hidden")
	r.Eventf(obj, nil, corev1.EventTypeNormal, "Active", "Ready=True", "other")
	if want := []string{"Warning GateFailed Stalled=True: needs a person", "Normal Active Ready=True: other"}; fmt.Sprint(rec) != fmt.Sprint(want) {
		t.Errorf("beside a held Normal Event: %q, want %q", rec, want)
	}
	if held.Besides(nil) != nil {
		t.Error("Besides(nil) is not nil")
	}
}
