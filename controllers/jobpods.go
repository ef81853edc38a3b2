package controllers

// Pods of a running Job that cannot start: unschedulable, a volume that cannot be mounted,
// an image that cannot be pulled or run, a failed init container.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReasonPodsNotStarting: a Job's pods have not started (unschedulable, a volume or image
// that cannot be had, a container the runtime refuses) for longer than PodStartTimeout, or
// at once for a cause that cannot pass by itself.
const ReasonPodsNotStarting = "PodsNotStarting"

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
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for _, p := range pods.Items {
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
