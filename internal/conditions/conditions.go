// Package conditions sets kstatus conditions (Ready, Reconciling, Stalled) on ragops
// resources, following sigs.k8s.io/cli-utils/pkg/kstatus: while work is in progress
// Reconciling=True and Ready=False; when progress needs a user's change Stalled=True and
// Ready=False; when done Ready=True and neither abnormal condition is present.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Reasons shared by more than one kind (and by the preview, which reports what a
// controller would). Kind-specific reasons live with their controllers.
const (
	ReasonSucceeded   = "Succeeded"
	ReasonProgressing = "Progressing"
	// ReasonInvalidStrategy: a ChunkingStrategy fails the chunker's own checks; the
	// strategy and every Index that uses it are Stalled with it.
	ReasonInvalidStrategy = "InvalidStrategy"
)

// Getter is a resource with conditions and a generation.
type Getter interface {
	GetGeneration() int64
	GetConditions() *[]metav1.Condition
}

func set(obj Getter, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(obj.GetConditions(), metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: obj.GetGeneration(),
	})
}

// MarkReady records a finished reconcile: Ready=True, no Reconciling, no Stalled.
func MarkReady(obj Getter, reason, msg string) {
	set(obj, ragopsv1alpha1.ConditionReady, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(obj.GetConditions(), ragopsv1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(obj.GetConditions(), ragopsv1alpha1.ConditionStalled)
}

// MarkReconciling records work in progress: Reconciling=True, Ready=False (or Unknown
// when keepReady is false and no Ready condition exists yet), no Stalled.
func MarkReconciling(obj Getter, reason, msg string) {
	set(obj, ragopsv1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(obj.GetConditions(), ragopsv1alpha1.ConditionStalled)
	set(obj, ragopsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// MarkReconcilingKeepReady records work in progress while the resource stays usable (an
// Index whose active revision keeps serving while a new one builds): Reconciling=True and
// the Ready condition left as it is.
func MarkReconcilingKeepReady(obj Getter, reason, msg string) {
	set(obj, ragopsv1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(obj.GetConditions(), ragopsv1alpha1.ConditionStalled)
}

// MarkStalled records a state that needs a change to progress: Stalled=True, Ready=False,
// no Reconciling.
func MarkStalled(obj Getter, reason, msg string) {
	set(obj, ragopsv1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(obj.GetConditions(), ragopsv1alpha1.ConditionReconciling)
	set(obj, ragopsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
}

// MarkNotReady records a transient failure that retries on its own: Ready=False with the
// reason, Reconciling=True.
func MarkNotReady(obj Getter, reason, msg string) {
	set(obj, ragopsv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	set(obj, ragopsv1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(obj.GetConditions(), ragopsv1alpha1.ConditionStalled)
}

// Set sets one condition of any type (for example DeletionBlocked).
func Set(obj Getter, typ string, status metav1.ConditionStatus, reason, msg string) {
	set(obj, typ, status, reason, msg)
}

// Remove removes one condition.
func Remove(obj Getter, typ string) { meta.RemoveStatusCondition(obj.GetConditions(), typ) }

// IsReady reports whether the Ready condition is True for the current generation.
func IsReady(obj Getter) bool {
	c := meta.FindStatusCondition(*obj.GetConditions(), ragopsv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
}

// MarkReconcilingKeepReadyOrFalse records work in progress; a resource that was Ready stays
// Ready (it keeps serving its last result), one that never was gets Ready=False.
func MarkReconcilingKeepReadyOrFalse(obj Getter, reason, msg string) {
	if c := meta.FindStatusCondition(*obj.GetConditions(), ragopsv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		MarkReconcilingKeepReady(obj, reason, msg)
		return
	}
	MarkReconciling(obj, reason, msg)
}
