package controllers_test

// Index deletion: not Ready while held, and a build running when it is deleted (review
// findings of issue 16, defect 12, and a fault).

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
)

// Defect 12: an Index whose deletion is held by a user's finalizer no longer claims to serve
// once its alias and collections are gone.
func TestDeletedIndexHeldByAnotherFinalizerIsNotReady(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r1)
	ctx := context.Background()
	base := idx.DeepCopy()
	idx.Finalizers = append(idx.Finalizers, "example.org/hold")
	if err := env.Client.Patch(ctx, idx, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "cleanup done and status says so", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return len(idx.Finalizers) == 1 && c != nil && c.Status == metav1.ConditionFalse && c.Reason == controllers.ReasonDeleting, nil
	})
	if c := condition(idx, ragopsv1alpha1.ConditionReady); strings.Contains(c.Message, "serves") || idx.Status.Chunks != 0 || idx.Status.ActiveRevision != "" {
		t.Errorf("deleted Index: Ready %q chunks %d active %q", c.Message, idx.Status.Chunks, idx.Status.ActiveRevision)
	}
	if ok, err := directStore(t).CollectionExists(ctx, c1); err != nil || ok {
		t.Errorf("collection %s exists=%v (err %v) after cleanup", c1, ok, err)
	}
	if target := aliasTarget(t, ns, "besluiten"); target != "" {
		t.Errorf("alias still points at %s after cleanup", target)
	}
	base = idx.DeepCopy()
	idx.Finalizers = nil
	if err := env.Client.Patch(ctx, idx, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// completeJob marks an Indexed Job of one shard Complete at `at`, without creating pods.
func completeJob(t *testing.T, job *batchv1.Job, at time.Time) {
	t.Helper()
	start, done := metav1.NewTime(at.Add(-time.Minute)), metav1.NewTime(at)
	job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &done, Succeeded: 1, CompletedIndexes: "0",
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: done, Reason: "CompletionsReached"},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: done, Reason: "CompletionsReached"},
		}}
	if err := env.Client.Status().Update(context.Background(), job); err != nil {
		t.Fatalf("complete Job %s: %v", job.Name, err)
	}
}

// Fault: an Index deleted while its build Job runs. The Job is stopped first and the
// collection outlives the Job's pods (a starting pod would recreate it); then the alias,
// the collection, the plan ConfigMap and the Index go, nothing orphaned.
func TestIndexDeletedWhileItsBuildRuns(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	idx, rev, job := firstBuild(t, ns)
	writeChunks(t, rev.Collection, rev.Name) // the pod is writing
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "build Job stopped", func() (bool, error) {
		var j batchv1.Job
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j)
		return err == nil && !j.DeletionTimestamp.IsZero(), err
	})
	s := directStore(t)
	// The controller stops the Jobs first and then writes the condition.
	eventually(t, 30*time.Second, "DeletionBlocked naming Job "+job.Name, func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionDeletionBlocked)
		return c != nil && strings.Contains(c.Message, job.Name), nil
	})
	if ok, err := s.CollectionExists(ctx, rev.Collection); err != nil || !ok {
		t.Fatalf("collection %s deleted while the Job's pods may still run (err %v)", rev.Collection, err)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &cm); err == nil {
		t.Errorf("plan ConfigMap %s survives its stopped Job", cm.Name)
	}
	// The garbage collector removes the Job once its pods are gone (envtest has none).
	var j batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
		t.Fatal(err)
	}
	j.Finalizers = nil
	if err := env.Client.Update(ctx, &j); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Index gone", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	if ok, err := s.CollectionExists(ctx, rev.Collection); err != nil || ok {
		t.Errorf("collection %s exists=%v (err %v) after the Index's deletion", rev.Collection, ok, err)
	}
	if got := aliasTarget(t, ns, "besluiten"); got != "" {
		t.Errorf("alias points at %q after the Index's deletion", got)
	}
	if jobs := ownedJobs(t, ns, idx); len(jobs) != 0 {
		t.Errorf("%d Jobs of the deleted Index remain", len(jobs))
	}
}
