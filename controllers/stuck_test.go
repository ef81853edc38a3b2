package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
)

// pendingPod plays a pod of job that does not start: it stays Pending with the given status.
func pendingPod(t *testing.T, job *batchv1.Job, status corev1.PodStatus) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-0", Labels: podLabels(job), OwnerReferences: controlledBy(job),
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	status.Phase = corev1.PodPending
	pod.Status = status
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// Defect 12: work that can never start kept the Index Reconciling at 0/N forever, and a
// failed init container (the model fetch) left only "BackoffLimitExceeded".
func TestBuildWhosePodsCannotStartSaysWhy(t *testing.T) {
	t.Run("unschedulable", func(t *testing.T) {
		ns := newNamespace(t)
		fixture(t, ns, nil)
		job := waitJob(t, ns, buildJobOf(t, ns))
		if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != int64((7*24*time.Hour).Seconds()) {
			t.Errorf("activeDeadlineSeconds %v, want the 7-day default", job.Spec.ActiveDeadlineSeconds)
		}
		pendingPod(t, job, corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}}})
		eventually(t, 30*time.Second, "Stalled PodsNotStarting", stalledWith(t, ns, controllers.ReasonPodsNotStarting, "Insufficient nvidia.com/gpu"))
	})
	t.Run("root image under runAsNonRoot", func(t *testing.T) {
		ns := newNamespace(t)
		fixture(t, ns, nil)
		job := waitJob(t, ns, buildJobOf(t, ns))
		// Reported at once: this cause does not pass by itself.
		pendingPod(t, job, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "embed", Image: "ragops:test",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
				Message: "container has runAsNonRoot and image will run as root"}}}}})
		eventually(t, 2*time.Second, "Stalled naming runAsNonRoot", stalledWith(t, ns, controllers.ReasonPodsNotStarting, "runAsNonRoot"))
	})
	t.Run("init container failed", func(t *testing.T) {
		ns := newNamespace(t)
		fixture(t, ns, nil)
		job := waitJob(t, ns, buildJobOf(t, ns))
		ctx := context.Background()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-0", Labels: podLabels(job), OwnerReferences: controlledBy(job),
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}}, Spec: *job.Spec.Template.Spec.DeepCopy()}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{{Name: "fetch-model", Image: "ragops:test",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				Message: "model archive: sha256 mismatch: got 1f2e, want 9a8b"}}}}}
		if err := env.Client.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		job.Status = batchv1.JobStatus{StartTime: &now, Failed: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}}
		if err := env.Client.Status().Update(ctx, job); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "Stalled naming the init container", func() (bool, error) {
			c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled)
			return c != nil && strings.Contains(c.Message, "init container fetch-model") && strings.Contains(c.Message, "sha256 mismatch"), nil
		})
	})
}

// buildJobOf waits for the first build's revision of fixture's Index and returns its Job name.
func buildJobOf(t *testing.T, ns string) string {
	t.Helper()
	var rev string
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		for _, r := range idx.Status.Revisions {
			if r.Name == idx.Status.Revision && r.Phase == ragopsv1alpha1.RevisionBuilding {
				rev = r.Name
				return true, nil
			}
		}
		return false, nil
	})
	return fmt.Sprintf("besluiten-%s-build", rev)
}

// Defect 12 of issue 32: an Index deletion waited with no bound for the pods of its running
// Jobs; a pod stuck on a lost node held it forever. Now the wait names the pod and its node,
// and JobStopTimeout (8 s in this suite) after the deletion the pod is force-deleted, a
// Warning Event says so, and the cleanup goes on.
func TestIndexDeletionForceDeletesPodsStuckOnALostNode(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	job := waitJob(t, ns, buildJobOf(t, ns))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-0", Labels: podLabels(job), OwnerReferences: controlledBy(job),
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}}, Spec: *job.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = "verloren-knoop"
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// A graceful delete of a pod bound to a node waits for its kubelet, which is gone.
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, getIndex(t, ns, "besluiten")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "the wait names the pod and its node", func() (bool, error) {
		c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionDeletionBlocked)
		return c != nil && c.Reason == controllers.ReasonDeleting &&
			strings.Contains(c.Message, fmt.Sprintf(`pod %s on node "verloren-knoop"`, pod.Name)), nil
	})
	eventually(t, 30*time.Second, "Index gone", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("stuck pod still there after the deletion (err %v)", err)
	}
	var evs eventsv1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	warned := 0
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == controllers.ReasonJobsNotStopping && strings.Contains(e.Note, "verloren-knoop") {
			warned++
		}
	}
	if warned == 0 {
		t.Errorf("no JobsNotStopping Warning Event naming the node")
	}
}
