package controllers_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
)

// A reconcile that started from a stale copy must not write its status over a newer one: the
// status patch is refused with a Conflict, the reconcile is requeued, and the newer status
// (here a condition another writer added) survives. Without the optimistic lock the merge
// patch would replace the conditions list with the stale copy's.
func TestStatusPatchFromAStaleCopyConflicts(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	strategy, _ := strategyAndIndex(ns)
	if err := env.Client.Create(ctx, strategy); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(strategy)
	var stale ragopsv1alpha1.ChunkingStrategy
	eventually(t, 30*time.Second, "strategy Ready", func() (bool, error) {
		err := env.Client.Get(ctx, key, &stale)
		return err == nil && meta.IsStatusConditionTrue(stale.Status.Conditions, ragopsv1alpha1.ConditionReady), err
	})
	newer := stale.DeepCopy()
	meta.SetStatusCondition(&newer.Status.Conditions, metav1.Condition{Type: "Audited", Status: metav1.ConditionTrue, Reason: "Newer", Message: "written after the stale read"})
	if err := env.Client.Status().Update(ctx, newer); err != nil {
		t.Fatal(err)
	}

	before := stale.DeepCopy()
	meta.SetStatusCondition(&stale.Status.Conditions, metav1.Condition{Type: ragopsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Stale", Message: "from a stale copy"})
	// The Conflict is no reconcile error: the reconcile runs again soon, on a fresh copy.
	if res, err := controllers.PatchStatus(ctx, env.Client, before, &stale); err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("status patch from a stale copy: result %+v error %v, want a requeue and no error", res, err)
	}
	var got ragopsv1alpha1.ChunkingStrategy
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(got.Status.Conditions, "Audited") == nil || !meta.IsStatusConditionTrue(got.Status.Conditions, ragopsv1alpha1.ConditionReady) {
		t.Errorf("conditions after the refused patch: %+v; want the newer Audited and Ready=True kept", got.Status.Conditions)
	}

	// From the fresh copy the same change goes through.
	before = got.DeepCopy()
	meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: "Audited", Status: metav1.ConditionFalse, Reason: "Fresh", Message: "from a fresh copy"})
	if res, err := controllers.PatchStatus(ctx, env.Client, before, &got); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("status patch from a fresh copy: result %+v error %v", res, err)
	}
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, "Audited"); c == nil || c.Reason != "Fresh" {
		t.Errorf("Audited after the fresh patch: %+v, want reason Fresh", c)
	}
}
