package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Run stops at the first step that stops or fails, and the merged result keeps the soonest
// requeue and the last outcome any step decided.
func TestRunStopsAndMerges(t *testing.T) {
	boom := errors.New("boom")
	step := func(name string, r Result, err error) Step[*[]string] {
		return func(_ context.Context, ran *[]string) (Result, error) {
			*ran = append(*ran, name)
			return r, err
		}
	}
	for _, tc := range []struct {
		name    string
		steps   []Step[*[]string]
		ran     int
		err     error
		outcome Outcome
		reason  string
		requeue time.Duration
	}{
		{"all proceed", []Step[*[]string]{step("a", ProceedFor(time.Minute), nil), step("b", Proceed.With(OutcomeReady, "Done", ""), nil), step("c", ProceedFor(time.Hour), nil)},
			3, nil, OutcomeReady, "Done", time.Minute},
		{"a stop ends the list", []Step[*[]string]{step("a", Proceed, nil), step("b", Stalled("Missing", "spec.x"), nil), step("c", Proceed.With(OutcomeReady, "Done", ""), nil)},
			2, nil, OutcomeStalled, "Missing", 0},
		{"an error ends it with the merged result", []Step[*[]string]{step("a", ProceedFor(time.Second).With(OutcomeProgressing, "Building", ""), nil), step("b", Stop, boom), step("c", Proceed, nil)},
			2, boom, OutcomeProgressing, "Building", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			res, err := Run(context.Background(), &ran, tc.steps...)
			if len(ran) != tc.ran || !errors.Is(err, tc.err) || res.Outcome != tc.outcome || res.Reason != tc.reason || res.RequeueAfter != tc.requeue {
				t.Errorf("ran %v, err %v, result %+v; want %d steps, %v, outcome %d %s, requeue %s", ran, err, res, tc.ran, tc.err, tc.outcome, tc.reason, tc.requeue)
			}
		})
	}
}

// Summarize maps each outcome to the kstatus conditions, on any resource with conditions.
func TestSummarizeOnEveryKind(t *testing.T) {
	for _, obj := range []Object{&ragopsv1alpha1.Corpus{}, &ragopsv1alpha1.Evaluation{}, &ragopsv1alpha1.ChunkingStrategy{}} {
		Summarize(obj, Stop.With(OutcomeProgressing, "Syncing", "scan"))
		conds := *obj.GetConditions()
		if !meta.IsStatusConditionTrue(conds, ragopsv1alpha1.ConditionReconciling) || !meta.IsStatusConditionFalse(conds, ragopsv1alpha1.ConditionReady) {
			t.Errorf("%T progressing: %+v", obj, conds)
		}
		Summarize(obj, Proceed)
		if len(*obj.GetConditions()) != len(conds) {
			t.Errorf("%T: a result without outcome changed the conditions", obj)
		}
		Summarize(obj, Stop.With(OutcomeReady, "Synced", "3 documents"))
		conds = *obj.GetConditions()
		if c := meta.FindStatusCondition(conds, ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Synced" ||
			meta.FindStatusCondition(conds, ragopsv1alpha1.ConditionReconciling) != nil {
			t.Errorf("%T ready: %+v", obj, conds)
		}
	}
}

// The other conditions steps decide are applied by Summarize in step order: a later step's
// decision on a type wins, and a removal removes.
func TestSummarizeAppliesTheStepsOtherConditions(t *testing.T) {
	idx := &ragopsv1alpha1.Index{}
	meta.SetStatusCondition(&idx.Status.Conditions, metav1.Condition{Type: "Stale", Status: metav1.ConditionTrue, Reason: "Old"})
	first := ProceedFor(time.Minute).Set("UnderReplicated", metav1.ConditionTrue, "ShardsUnderReplicated", "1 of 2")
	second := Proceed.Set("UnderReplicated", metav1.ConditionFalse, "ReplicasHealthy", "2 of 2").Remove("Stale")
	Summarize(idx, first.Merge(second).Merge(Stop.With(OutcomeReady, "Active", "serves")))
	c := meta.FindStatusCondition(idx.Status.Conditions, "UnderReplicated")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ReplicasHealthy" {
		t.Errorf("UnderReplicated %+v; want the later step's False/ReplicasHealthy", c)
	}
	if meta.FindStatusCondition(idx.Status.Conditions, "Stale") != nil || !meta.IsStatusConditionTrue(idx.Status.Conditions, ragopsv1alpha1.ConditionReady) {
		t.Errorf("conditions %+v; want Stale removed and Ready True", idx.Status.Conditions)
	}
	if len(first.Also) != 1 {
		t.Errorf("Merge changed the first step's result: %+v", first.Also)
	}
}
