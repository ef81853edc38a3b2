package controllers

// The gate's inputs: which run of a gating Evaluation the gate may decide on. Both sides of
// a comparison are measured on the same corpus revision, and a retried or re-measured
// Evaluation counts only once the run made for the request has been collected.

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/workload"
)

// corpusRetryPrefix starts the ragops.dev/retry value the gate sets on a gating Evaluation
// to measure it again on a corpus revision (the value is the prefix and that revision).
const corpusRetryPrefix = "corpus-"

// gateRun says whether ev's figures are a run the gate may decide on for revision rev: the
// run of ev's current generation and ragops.dev/retry value (the Job made for them, the
// last in status.history), collected with its per-query results settled (ResultsStored
// not Unknown). A run in progress, or one that started before the retry or re-measure
// the gate asked for, is not: why then says what the gate waits for, "" when it may decide.
func gateRun(ev *ragopsv1alpha1.Evaluation, rev string) (why string) {
	want := workload.EvaluationJobName(ev, rev, ev.Annotations[AnnotationRetry])
	h := ev.Status.History
	switch {
	case ev.Status.ObservedGeneration != ev.Generation || ev.Status.LastHandledRetry != ev.Annotations[AnnotationRetry]:
		return fmt.Sprintf("the gating Evaluation %s has not started the run its spec and %s=%q ask for", ev.Name, AnnotationRetry, ev.Annotations[AnnotationRetry])
	case len(h) == 0 || h[len(h)-1].Job != want || ev.Status.Revision != rev || ev.Status.RecallAt10 == nil || !conditions.IsReady(ev):
		return fmt.Sprintf("the gating Evaluation %s runs Job %s", ev.Name, want)
	case resultsPending(ev):
		return fmt.Sprintf("the gating Evaluation %s stores the per-query results of Job %s", ev.Name, want)
	}
	return ""
}

// measuredCorpus is the corpus revision ev's last run measured ("" when not known).
func measuredCorpus(ev *ragopsv1alpha1.Evaluation) string {
	if ev.Status.CorpusRevision != "" {
		return ev.Status.CorpusRevision
	}
	if h := ev.Status.History; len(h) > 0 {
		return h[len(h)-1].CorpusRevision // recorded before status.corpusRevision
	}
	return ""
}

// evaluationStatusChanged passes an Evaluation update that the gate may wait for: a new
// generation or any status change (a run started or collected, ResultsStored settled, a
// same-revision re-run that ended with Ready True all along).
var evaluationStatusChanged = predicate.Funcs{UpdateFunc: func(e evtUpdate) bool {
	a, okA := e.ObjectOld.(*ragopsv1alpha1.Evaluation)
	b, okB := e.ObjectNew.(*ragopsv1alpha1.Evaluation)
	if !okA || !okB {
		return true
	}
	return a.Generation != b.Generation || !equality.Semantic.DeepEqual(a.Status, b.Status)
}}

// stalledGateEvaluation returns ev's Stalled condition when its current run failed (not one
// it has yet to start for a new generation or retry value), else nil.
func stalledGateEvaluation(ev *ragopsv1alpha1.Evaluation) *metav1.Condition {
	c := meta.FindStatusCondition(ev.Status.Conditions, ragopsv1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || ev.Status.ObservedGeneration != ev.Generation || ev.Status.LastHandledRetry != ev.Annotations[AnnotationRetry] {
		return nil
	}
	return c
}
