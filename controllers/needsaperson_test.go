package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// A condition whose True is the healthy state (ServingReady, ServingSettingsApplied) never
// calls for a Warning Event; Stalled=True and Ready=False for a problem do, and so does a
// failed Weaviate reader provisioning (a Weaviate without RBAC does not).
func TestNeedsAPersonKnowsPolarity(t *testing.T) {
	for _, tc := range []struct {
		c    metav1.Condition
		want bool
	}{
		{metav1.Condition{Type: ragopsv1alpha1.ConditionServingReady, Status: metav1.ConditionTrue, Reason: "Serving"}, false},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionServingSettingsApplied, Status: metav1.ConditionTrue, Reason: ReasonOwnSettings}, false},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionServingSettingsApplied, Status: metav1.ConditionFalse, Reason: ReasonSharedServerSettings}, false},
		{metav1.Condition{Type: ConditionResultsStored, Status: metav1.ConditionTrue, Reason: "Stored"}, false},
		{metav1.Condition{Type: ConditionResultsStored, Status: metav1.ConditionFalse, Reason: ReasonResultsRefused}, true},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: ReasonGateFailed}, true},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonWeaviateError}, true},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonBuilding}, false},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionWeaviateReader, Status: metav1.ConditionTrue, Reason: ReasonReaderProvisioned}, false},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionWeaviateReader, Status: metav1.ConditionFalse, Reason: ReasonRBACNotEnforced}, false},
		{metav1.Condition{Type: ragopsv1alpha1.ConditionWeaviateReader, Status: metav1.ConditionFalse, Reason: ReasonReaderProvisioningFailed}, true},
	} {
		if got := needsAPerson(tc.c); got != tc.want {
			t.Errorf("needsAPerson(%s=%s %s) = %v, want %v", tc.c.Type, tc.c.Status, tc.c.Reason, got, tc.want)
		}
	}
}
