package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

type evtUpdate = event.UpdateEvent

// problemReasons are the Ready=False reasons that mean something is wrong (not merely in
// progress or waiting on another object): an unreachable or inconsistent Weaviate, lost data,
// an unreadable source, a name taken by a foreign object.
var problemReasons = map[string]bool{
	ReasonWeaviateError: true, ReasonCollectionLost: true, ReasonIncompleteCollection: true,
	ReasonCleanupFailed: true, ReasonSourceUnreadable: true, ReasonJobConflict: true,
}

// positivePolarity are the condition types other than Ready whose True is the healthy
// state: True never needs a person.
var positivePolarity = map[string]bool{
	ragopsv1alpha1.ConditionServingReady: true, ragopsv1alpha1.ConditionServingSettingsApplied: true,
	ConditionResultsStored: true,
}

// needsAPerson reports whether a condition calls for a Warning Event: Stalled=True,
// ResultsStored=False for a refused or lost set, WeaviateReaderProvisioned=False for a failed
// provisioning, a DeletionBlocked or UnderReplicated that is
// not just waiting for pods to stop, or Ready=False for one of problemReasons. Ready=False
// while building, gating, syncing or waiting for a Corpus or Index is progress (Normal), and
// a positive-polarity condition (positivePolarity) is informational.
func needsAPerson(c metav1.Condition) bool {
	switch {
	case c.Type == ConditionResultsStored:
		// A lost or refused set needs a person, not a stored one.
		return c.Status == metav1.ConditionFalse && (c.Reason == ReasonResultsUnavailable || c.Reason == ReasonResultsRefused)
	case c.Type == ragopsv1alpha1.ConditionReady:
		return c.Status == metav1.ConditionFalse && problemReasons[c.Reason]
	case c.Type == ragopsv1alpha1.ConditionWeaviateReader:
		// A Weaviate without RBAC is a deployment choice docs/security.md describes.
		return c.Status == metav1.ConditionFalse && c.Reason == ReasonReaderProvisioningFailed
	case positivePolarity[c.Type], c.Status != metav1.ConditionTrue:
		return false
	case c.Type == ragopsv1alpha1.ConditionReconciling:
		return false
	case c.Type == ragopsv1alpha1.ConditionDeletionBlocked:
		return c.Reason != ReasonDeleting
	}
	return true
}
