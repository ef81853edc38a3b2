package controllers_test

// Index Jobs: names, ownership, superseded builds and shard results that outlive their pods
// (review findings of issue 16, defects 2, 5 and 9).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
)

// ownedJobs lists the Jobs of a namespace that obj controls.
func ownedJobs(t *testing.T, ns string, obj metav1.Object) []batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range jobs.Items {
		if metav1.IsControlledBy(&j, obj) {
			out = append(out, j)
		}
	}
	return out
}

func patchAnnotation(t *testing.T, obj client.Object, key, value string) {
	t.Helper()
	base := obj.DeepCopyObject().(client.Object)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
	if err := env.Client.Patch(context.Background(), obj, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// Defect 2: two Indexes whose names share their first 40 characters (same spec, so the
// same revision hash) each get their own build Job; neither adopts the other's.
func TestIndexesSharingANamePrefixGetTheirOwnJobs(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	prefix := strings.Repeat("raadsbesluiten-gemeente-", 2) // 48 characters
	var idxs []*ragopsv1alpha1.Index
	for _, suffix := range []string{"noord", "zuid"} {
		_, idx := strategyAndIndex(ns)
		idx.Name = prefix + suffix
		if err := env.Client.Create(ctx, idx); err != nil {
			t.Fatal(err)
		}
		idxs = append(idxs, idx)
	}
	names := map[string]bool{}
	for _, idx := range idxs {
		var jobs []batchv1.Job
		eventually(t, 30*time.Second, "build Job of "+idx.Name, func() (bool, error) {
			jobs = ownedJobs(t, ns, getIndex(t, ns, idx.Name))
			return len(jobs) == 1, nil
		})
		names[jobs[0].Name] = true
		if !strings.HasSuffix(jobs[0].Name, "-build") {
			t.Errorf("Job %s is not a build Job", jobs[0].Name)
		}
	}
	if len(names) != 2 {
		t.Fatalf("the two Indexes share build Job %v", names)
	}
	// The build Job is created before the reconcile that created it writes status.revision.
	var a, b *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "status.revision of both Indexes", func() (bool, error) {
		a, b = getIndex(t, ns, idxs[0].Name), getIndex(t, ns, idxs[1].Name)
		return a.Status.Revision != "" && b.Status.Revision != "", nil
	})
	if a.Status.Revision != b.Status.Revision {
		t.Fatalf("revisions differ (%s, %s): the test needs the same revision hash", a.Status.Revision, b.Status.Revision)
	}
}

// Defect 2: a Job with the build Job's name that the Index does not control is never used;
// the Index stalls with a condition naming it.
func TestForeignJobWithTheBuildJobsNameIsNotAdopted(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	// A suspended Corpus has no revision yet, so nothing is built while the test learns the
	// revision.
	docs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: map[string]string{"a.md": "# A\nTekst."}}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{Suspend: true, ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
	strategy, idx := strategyAndIndex(ns)
	for _, o := range []client.Object{docs, corpus, strategy, idx} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The Index computes its revision but cannot build: the Corpus has no revision yet.
	var rev string
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		rev = getIndex(t, ns, idx.Name).Status.Revision
		return rev != "", nil
	})
	name := fmt.Sprintf("besluiten-%s-build", rev)
	foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	base := corpus.DeepCopy()
	corpus.Spec.Suspend = false
	if err := env.Client.Patch(ctx, corpus, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	var ix *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "Stalled JobConflict", func() (bool, error) {
		ix = getIndex(t, ns, "besluiten")
		c := condition(ix, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonJobConflict && strings.Contains(c.Message, name), nil
	})
	if jobs := ownedJobs(t, ns, ix); len(jobs) != 0 {
		t.Fatalf("the Index created or adopted %d Jobs", len(jobs))
	}
}

// Defect 5: a spec change during a build stops the superseded revision's Job, and its
// collection is not pruned while that Job's pods may still write.
func TestSpecChangeDuringBuildStopsTheSupersededJob(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Rollout.RevisionHistoryLimit = 1 })
	ctx := context.Background()
	idx, r1, job1 := firstBuild(t, ns)
	// The first build's pod has started writing.
	s := directStore(t)
	c1 := r1.Collection
	writeChunks(t, c1, r1.Name)
	setStrategySize(t, ns, 128)
	eventually(t, 30*time.Second, "superseded revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		for _, r := range idx.Status.Revisions {
			if r.Name == r1.Name {
				return r.Phase == ragopsv1alpha1.RevisionSuperseded, nil
			}
		}
		return false, nil
	})
	var j batchv1.Job
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(job1), &j)
	if err == nil && j.DeletionTimestamp.IsZero() {
		t.Fatalf("the superseded build Job %s still runs", job1.Name)
	}
	// envtest has no garbage collector: the Job waits for its pods (foreground deletion).
	// Meanwhile its collection must stay.
	r2, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r2)
	if ok, err := s.CollectionExists(ctx, c1); err != nil || !ok {
		t.Fatalf("collection %s of the stopped build was deleted while its Job was still going (err %v)", c1, err)
	}
	// The pods are gone: play the garbage collector.
	if err == nil {
		j.Finalizers = nil
		if err := env.Client.Update(ctx, &j); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "superseded collection pruned", func() (bool, error) {
		ok, err := s.CollectionExists(ctx, c1)
		return err == nil && !ok, err
	})
}

// Defect 9: shard results read while the Job ran survive the pods being deleted before the
// Job completes; results never read are counted in Weaviate instead of erroring forever.
func TestShardResultsSurviveTheirPods(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	idx, rev, job := firstBuild(t, ns)
	writeChunks(t, rev.Collection, rev.Name)
	// The shard's pod succeeds; the Job has not completed yet.
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 6, Tokens: 600, Seconds: 2})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-0", Labels: podLabels(job), OwnerReferences: controlledBy(job),
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}}, Spec: *job.Spec.Template.Spec.DeepCopy()}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: "ragops:test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: string(res), Reason: "Completed"}}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "result saved in the plan ConfigMap", func() (bool, error) {
		var cm corev1.ConfigMap
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &cm)
		return err == nil && cm.Data["result-0.json"] == string(res), err
	})
	// The pod is garbage-collected before the Job completes.
	if err := env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	completeJob(t, job, time.Now())
	idx = waitActive(t, ns, "besluiten", rev.Name)
	if r := idx.Status.Revisions[0]; r.Chunks != 6 || r.Tokens != 600 || r.Documents != 3 {
		t.Fatalf("revision figures %d documents %d chunks %d tokens, want 3, 6, 600 from the saved result", r.Documents, r.Chunks, r.Tokens)
	}

	// A second revision whose pod went before it was ever read: after the grace the build
	// cannot be verified, so it runs again (resuming) and its second attempt's result counts.
	setStrategySize(t, ns, 100)
	eventually(t, 30*time.Second, "second revision building", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 2, nil
	})
	rev2 := idx.Status.Revisions[0]
	job2 := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev2.Name))
	writeChunks(t, rev2.Collection, rev2.Name)
	completeJob(t, job2, time.Now().Add(-time.Hour))
	buildAttempt(t, ns, "besluiten", 2)
	idx = waitActive(t, ns, "besluiten", rev2.Name)
	if r := idx.Status.Revisions[0]; r.Chunks != 6 || r.Documents != 3 || r.Tokens != 600 || r.Attempt != 2 || r.IncompleteRuns != 1 {
		t.Fatalf("revision %d documents %d chunks %d tokens, attempt %d, %d incomplete runs: want 3, 6, 600 from the re-run, attempt 2, 1",
			r.Documents, r.Chunks, r.Tokens, r.Attempt, r.IncompleteRuns)
	}
	eventually(t, 30*time.Second, "Warning Event ShardResultsLost", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "ShardResultsLost" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, rev2.Name) {
				return true, nil
			}
		}
		return false, nil
	})
}

// A build Job deleted by hand while it runs (foreground: it stays while its pods stop) is
// waited for, Progressing and naming it, not read or errored on; once it is gone the build
// runs again under the same name, with a plan ConfigMap of its own, and completes.
func TestBuildJobDeletedWhileItRunsIsWaitedForThenRunsAgain(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	_, rev, job := firstBuild(t, ns)
	if err := env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Job %s is being deleted; it runs again once it is gone", job.Name)
	eventually(t, 30*time.Second, "the Index waiting for the deleted Job", func() (bool, error) {
		c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionReconciling)
		return c != nil && strings.Contains(c.Message, want), nil
	})
	playGC(t, *job)
	again := waitJob(t, ns, job.Name)
	if again.UID == job.UID {
		t.Fatalf("Job %s was not created again", job.Name)
	}
	if gotRev, gotCollection := buildAttempt(t, ns, "besluiten", 1); gotRev != rev.Name || gotCollection != rev.Collection {
		t.Fatalf("the re-created build wrote revision %s into %s, want %s into %s", gotRev, gotCollection, rev.Name, rev.Collection)
	}
	if idx := waitActive(t, ns, "besluiten", rev.Name); idx.Status.Revisions[0].Documents != 3 {
		t.Errorf("revision %s: %d documents after the re-run, want 3", rev.Name, idx.Status.Revisions[0].Documents)
	}
}
