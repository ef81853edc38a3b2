package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
)

// The Index's steps only return results; summarize alone sets the conditions, from the last
// step that decided an outcome, with the soonest requeue of all steps.
func TestSummarizeSetsConditionsFromTheLastDecidingStep(t *testing.T) {
	const (
		ready       = ragopsv1alpha1.ConditionReady
		reconciling = ragopsv1alpha1.ConditionReconciling
		stalledC    = ragopsv1alpha1.ConditionStalled
		blocked     = ragopsv1alpha1.ConditionDeletionBlocked
	)
	serving := []metav1.Condition{{Type: ready, Status: metav1.ConditionTrue, Reason: ReasonActive, Message: "revision r1 serves 6 chunks"}}
	notServing := []metav1.Condition{
		{Type: ready, Status: metav1.ConditionFalse, Reason: ReasonBuilding, Message: "building"},
		{Type: reconciling, Status: metav1.ConditionTrue, Reason: ReasonBuilding, Message: "building"},
	}
	for _, tc := range []struct {
		name   string
		before []metav1.Condition
		steps  []reconcile.Result
		// want maps each condition type to "Status/Reason"; "" means absent.
		want    map[string]string
		requeue time.Duration
	}{
		{"a build while r1 serves keeps Ready", serving,
			[]reconcile.Result{reconcile.Proceed, reconcile.StopFor(10*time.Second).With(reconcile.OutcomeProgressing, ReasonBuilding, "building revision r2: 1/2 (50%) documents")},
			map[string]string{ready: "True/Active", reconciling: "True/Building", stalledC: ""}, 10 * time.Second},
		{"a first build is not Ready", nil,
			[]reconcile.Result{reconcile.Proceed, reconcile.StopFor(10*time.Second).With(reconcile.OutcomeProgressing, ReasonBuilding, "building revision r1: 0/2 (0%) documents")},
			map[string]string{ready: "False/Building", reconciling: "True/Building", stalledC: ""}, 10 * time.Second},
		{"the sync's Ready survives a prune without outcome", notServing,
			[]reconcile.Result{reconcile.Proceed, reconcile.Proceed, reconcile.ProceedFor(5 * time.Minute), reconcile.ProceedFor(time.Second).With(reconcile.OutcomeReady, ReasonActive, "revision r1 serves 6 chunks"), reconcile.Proceed},
			map[string]string{ready: "True/Active", reconciling: "", stalledC: ""}, time.Second},
		{"Weaviate unreachable", serving,
			[]reconcile.Result{reconcile.Proceed, reconcile.Proceed, reconcile.StopFor(10*time.Second).With(reconcile.OutcomeRetrying, ReasonWeaviateError, "read alias: connection refused")},
			map[string]string{ready: "False/WeaviateUnavailable", reconciling: "True/WeaviateUnavailable", stalledC: ""}, 10 * time.Second},
		{"a missing Corpus stalls", serving,
			[]reconcile.Result{reconcile.Stalled(ReasonCorpusNotFound, `spec.corpusRef.name: Corpus "x" not found`)},
			map[string]string{ready: "False/CorpusNotFound", reconciling: "", stalledC: "True/CorpusNotFound"}, 0},
		{"suspended while serving stays Ready", serving,
			[]reconcile.Result{suspended("suspended")},
			map[string]string{ready: "True/Active", reconciling: "", stalledC: ""}, 0},
		{"suspended before serving is Stalled", notServing,
			[]reconcile.Result{suspended("suspended")},
			map[string]string{ready: "False/Suspended", reconciling: "", stalledC: "True/Suspended"}, 0},
		{"deletion waits for Job pods", serving,
			[]reconcile.Result{reconcile.StopFor(2*time.Second).With(reconcile.OutcomeDeletionBlocked, ReasonDeleting, "waiting for the pods of Job(s) j")},
			map[string]string{ready: "True/Active", blocked: "True/Deleting"}, 2 * time.Second},
		{"deleted while another finalizer holds it", append(serving, metav1.Condition{Type: blocked, Status: metav1.ConditionTrue, Reason: ReasonDeleting}),
			[]reconcile.Result{reconcile.Stop.With(reconcile.OutcomeDeleted, ReasonDeleting, "deleted: alias a and its collections are gone")},
			map[string]string{ready: "False/Deleting", reconciling: "", stalledC: "", blocked: ""}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := &ragopsv1alpha1.Index{}
			for _, c := range tc.before {
				meta.SetStatusCondition(&idx.Status.Conditions, c)
			}
			var merged reconcile.Result
			for _, s := range tc.steps {
				merged = merged.Merge(s)
			}
			res := reconcile.Summarize(idx, merged)
			if res.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.requeue)
			}
			for typ, want := range tc.want {
				got := ""
				if c := meta.FindStatusCondition(idx.Status.Conditions, typ); c != nil {
					got = string(c.Status) + "/" + c.Reason
				}
				if got != want {
					t.Errorf("%s = %q, want %q", typ, got, want)
				}
			}
		})
	}
}
