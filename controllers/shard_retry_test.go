package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// playShardPod creates a finished pod of one completion index of an Indexed Job (attempt n
// of that index), as playPod does.
func playShardPod(t *testing.T, job *batchv1.Job, index, n int, exitCode int32, msg string) {
	t.Helper()
	playPod(t, job, fmt.Sprintf("%s-%d-%d", job.Name, index, n), index, "", exitCode, msg)
}

// Issue 56, one Job-wide retry budget: a build of three shards whose shard 1 fails on every
// try (an OOM on a tail document) while shards 0 and 2 complete. The Job gives each shard its
// own budget, so the Job controller finishes the others and fails the Job with
// failedIndexes 1; the revision fails naming shard 1 and its cause, with the exact documents,
// chunks and tokens of shards 0 and 2, and a retry runs a new attempt (which resumes the
// completed shards' documents).
func TestBuildShardThatFailsAloneKeepsTheOthersCounted(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Embedder.Shards = 3 })
	_, rev, job := firstBuild(t, ns)
	if got := ptr.Deref(job.Spec.BackoffLimitPerIndex, -1); got != workload.DefaultBackoffLimit || ptr.Deref(job.Spec.MaxFailedIndexes, -1) != 1 {
		t.Fatalf("build Job of 3 shards: backoffLimitPerIndex %d maxFailedIndexes %d backoffLimit %d; want %d per shard, at most 1 failed shard",
			got, ptr.Deref(job.Spec.MaxFailedIndexes, -1), ptr.Deref(job.Spec.BackoffLimit, -1), workload.DefaultBackoffLimit)
	}

	now := metav1.Now()
	start := metav1.NewTime(now.Add(-time.Minute))
	job.Status = batchv1.JobStatus{StartTime: &start, Succeeded: 2, Failed: workload.DefaultBackoffLimit + 1,
		CompletedIndexes: "0,2", FailedIndexes: ptr.To("1"), Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: batchv1.JobReasonFailedIndexes, Message: "Job has failed indexes"},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: batchv1.JobReasonFailedIndexes, Message: "Job has failed indexes"},
		}}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("update Job status: %v", err)
	}

	// The pods show up after the Job's status (the manager's pod cache lags behind the Job's):
	// the completed shards' results are waited for, not counted lost.
	for n := range int(workload.DefaultBackoffLimit) + 1 {
		playShardPod(t, job, 1, n, 137, "embedding a.md: out of memory")
	}
	results := map[int]plan.BuildResult{
		0: {Shard: 0, Documents: 2, Chunks: 5, Tokens: 410, StoredBytes: 4000, Seconds: 3},
		2: {Shard: 2, Documents: 1, Chunks: 3, Tokens: 150, StoredBytes: 1500, Seconds: 2},
	}
	for i, br := range results {
		msg, _ := json.Marshal(br)
		playShardPod(t, job, i, 0, 0, string(msg))
	}
	eventually(t, 60*time.Second, "Stalled naming the failed shard", stalledWith(t, ns, controllers.ReasonShardsFailed, "shard(s) 1 of 3 failed"))
	var got ragopsv1alpha1.RevisionStatus
	for _, r := range getIndex(t, ns, "besluiten").Status.Revisions {
		if r.Name == rev.Name {
			got = r
		}
	}
	if got.Phase != ragopsv1alpha1.RevisionFailed || got.Documents != 3 || got.Chunks != 8 || got.Tokens != 560 || got.StoredBytes != 5500 {
		t.Errorf("revision %s: phase %s, %d documents, %d chunks, %d tokens, %d bytes; want Failed with shards 0 and 2's 3, 8, 560, 5500",
			got.Name, got.Phase, got.Documents, got.Chunks, got.Tokens, got.StoredBytes)
	}
	for _, want := range []string{"out of memory", "shard(s) 0,2 completed: 3 documents, 8 chunks"} {
		if !strings.Contains(got.Message, want) {
			t.Errorf("revision message %q does not say %q", got.Message, want)
		}
	}

	// A retry runs a new attempt of the build.
	patchAnnotation(t, getIndex(t, ns, "besluiten"), controllers.AnnotationRetry, "1")
	waitJob(t, ns, job.Name+"-2")
}
