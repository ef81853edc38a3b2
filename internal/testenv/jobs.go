package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FinishJob plays the kubelet and the Job controller (no pods run under envtest): one pod
// per completion index with the given termination message, then the Job marked Complete.
func FinishJob(t testing.TB, c client.Client, job *batchv1.Job, messages ...string) {
	t.Helper()
	ctx := context.Background()
	// The Job controller gives pods the template's labels and job-name (the manager caches
	// only pods labelled app.kubernetes.io/managed-by=ragops) and itself as their controller
	// (the manager reads only the pods the Job controls).
	labels := map[string]string{"batch.kubernetes.io/job-name": job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	for i, msg := range messages {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: fmt.Sprintf("%s-%d", job.Name, i),
				Labels:          labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
				Annotations:     map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(i)}},
			Spec: *job.Spec.Template.Spec.DeepCopy(),
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
			Name: job.Spec.Template.Spec.Containers[0].Name, Image: job.Spec.Template.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: msg, Reason: "Completed"}},
		}}}
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.Now()
	start := metav1.NewTime(now.Add(-2 * time.Second))
	n := int32(len(messages))
	job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &now, Succeeded: n, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
	}}
	if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
		job.Status.CompletedIndexes = "0"
		if n > 1 {
			job.Status.CompletedIndexes = fmt.Sprintf("0-%d", n-1)
		}
	}
	if err := c.Status().Update(ctx, job); err != nil {
		t.Fatalf("complete Job %s: %v", job.Name, err)
	}
}
