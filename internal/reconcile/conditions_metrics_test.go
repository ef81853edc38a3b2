package reconcile

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// conditionSeries returns the labels of the ragops_condition series of one object.
func conditionSeries(t *testing.T, namespace, kind, name string) []map[string]string {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != "ragops_condition" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] == namespace && l["kind"] == kind && l["name"] == name {
				out = append(out, l)
			}
		}
	}
	return out
}

// Issue 53: the conditions a reconcile stores are exported as ragops_condition series
// (labelled with the object's kind), and an object found gone at the patch loses them.
func TestDoneExportsConditionsAndForgetsAGoneObject(t *testing.T) {
	exp := &ragopsv1alpha1.Experiment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-patch", Name: "sweep"}}
	exp.Status.Conditions = []metav1.Condition{
		{Type: ragopsv1alpha1.ConditionBudgetExhausted, Status: metav1.ConditionTrue, Reason: ragopsv1alpha1.ReasonBudgetExhausted},
		{Type: ragopsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ragopsv1alpha1.ReasonBudgetExhausted},
	}
	scheme := runtime.NewScheme()
	if err := ragopsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(exp).Build()
	ctx := context.Background()
	if err := c.Create(ctx, exp.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	var res ctrl.Result
	var retErr error
	// Status unchanged since the read: nothing to patch, still stored and exported.
	if !NewStatusPatcher(exp, nil).Done(ctx, c, nil, exp, &res, &retErr) || retErr != nil {
		t.Fatalf("Done on an unchanged status: not stored (%v)", retErr)
	}
	got := conditionSeries(t, "ns-patch", "Experiment", "sweep")
	if len(got) != 2 {
		t.Fatalf("condition series %v, want 2", got)
	}
	for _, l := range got {
		if l["type"] == ragopsv1alpha1.ConditionBudgetExhausted && (l["status"] != "True" || l["reason"] != "BudgetExhausted") {
			t.Errorf("BudgetExhausted series %v, want status True, reason BudgetExhausted", l)
		}
	}

	// The Experiment is deleted while a reconcile runs: the patch finds it gone.
	if err := c.Delete(ctx, exp.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	p := NewStatusPatcher(exp, nil)
	changed := exp.DeepCopy()
	changed.Status.Conditions[1].Reason = "Completed"
	if p.Done(ctx, c, nil, changed, &res, &retErr) || retErr != nil {
		t.Fatalf("Done on a gone object: stored or error %v", retErr)
	}
	if got := conditionSeries(t, "ns-patch", "Experiment", "sweep"); len(got) != 0 {
		t.Errorf("condition series of a gone Experiment %v, want none", got)
	}
}
