package controllers

// Pods of a Job: which pods are the Job's (jobPods, the one rule every reader of a Job's
// pods goes through), and those of a running Job that cannot start: unschedulable, a volume
// that cannot be mounted, an image that cannot be pulled or run, a failed init container.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReasonPodsNotStarting: a Job's pods have not started (unschedulable, a volume or image
// that cannot be had, a container the runtime refuses) for longer than PodStartTimeout, or
// at once for a cause that cannot pass by itself.
const ReasonPodsNotStarting = "PodsNotStarting"

// jobPods lists the pods of job: those carrying its job-name label that the Job controls (a
// controller owner reference with the Job's UID), in the List's order. A pod that only
// carries the label (left by an earlier Job of the same name, or made by someone else) is not
// the Job's: its termination message, log and state are never taken for the Job's.
func jobPods(ctx context.Context, c client.Reader, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, err
	}
	out := pods.Items[:0]
	for _, p := range pods.Items {
		if metav1.IsControlledBy(&p, job) {
			out = append(out, p)
		}
	}
	return out, nil
}

// fatalWaiting are container waiting reasons that do not pass without a change: the
// container's configuration refers to what is missing (a Secret or ConfigMap key), the
// runtime refuses it (runAsNonRoot with an image that runs as root), or the image name is
// invalid.
var fatalWaiting = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true,
}

// notStarting returns why the pods of a running Job do not start, or "" when they start (or
// have not been stuck for long yet): a pod unschedulable, or whose containers wait (pulling,
// creating, mounting), for longer than timeout, or with a fatal waiting reason at once. The
// message names the pod, the cause the scheduler or kubelet gave, and how long it waited.
func notStarting(ctx context.Context, c client.Reader, job *batchv1.Job, timeout time.Duration, now time.Time) (string, error) {
	pods, err := jobPods(ctx, c, job)
	if err != nil {
		return "", err
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending || !p.DeletionTimestamp.IsZero() {
			continue
		}
		waited := now.Sub(p.CreationTimestamp.Time)
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && (fatalWaiting[w.Reason] || waited >= timeout) {
				return fmt.Sprintf("pod %s: container %s is waiting (%s) for %s: %s", p.Name, cs.Name, w.Reason, waited.Round(time.Second), orDescribe(w.Message, p.Name)), nil
			}
		}
		if waited < timeout {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				return fmt.Sprintf("pod %s is not scheduled after %s (%s): %s", p.Name, waited.Round(time.Second), cond.Reason, orDescribe(cond.Message, p.Name)), nil
			}
		}
		return fmt.Sprintf("pod %s is still Pending after %s: %s", p.Name, waited.Round(time.Second), orDescribe("", p.Name)), nil
	}
	return "", nil
}

// orDescribe returns msg, or where to look when the kubelet gave none (a volume that cannot
// be mounted shows only in the pod's Events).
func orDescribe(msg, pod string) string {
	if msg = strings.TrimSpace(msg); msg != "" {
		return msg
	}
	return fmt.Sprintf("no message; a PVC, ConfigMap or Secret volume that cannot be mounted shows in `kubectl describe pod %s`", pod)
}
