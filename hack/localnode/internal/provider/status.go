package provider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragops/ragops/hack/localnode/internal/sandbox"
	"github.com/virtual-kubelet/virtual-kubelet/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// refreshStatus recomputes the pod status from the container states.
func (r *podRun) refreshStatus() {
	r.mu.Lock()
	defer r.mu.Unlock()
	pod := r.st.Pod
	st := &pod.Status
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	status := func(c *corev1.Container, init bool) corev1.ContainerStatus {
		cs := r.ctr(c.Name, init)
		out := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "localnode://" + NormalizeImage(c.Image)}
		if cs.Attempts > 0 {
			out.RestartCount = int32(cs.Attempts - 1)
			out.ContainerID = fmt.Sprintf("localnode://%s/%s/%d", pod.UID, c.Name, cs.Attempts-1)
		}
		if cs.Last != nil {
			out.LastTerminationState.Terminated = cs.Last.state()
		}
		switch {
		case cs.Running:
			out.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.Started)}
			out.Ready, out.Started = init || c.ReadinessProbe == nil || cs.Ready, ptr(true)
		case cs.Term != nil:
			out.State.Terminated = cs.Term.state()
			out.Started = ptr(false)
		case cs.Waiting != nil:
			out.State.Waiting = cs.Waiting.DeepCopy()
			out.Started = ptr(false)
		default:
			reason := "ContainerCreating"
			if !init && !r.st.InitDone {
				reason = "PodInitializing"
			}
			out.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
			out.Started = ptr(false)
		}
		return out
	}
	st.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, status(&pod.Spec.InitContainers[i], true))
	}
	st.ContainerStatuses = nil
	allReady, anyStarted := len(pod.Spec.Containers) > 0, false
	for i := range pod.Spec.Containers {
		cs := status(&pod.Spec.Containers[i], false)
		allReady = allReady && cs.Ready
		anyStarted = anyStarted || cs.ContainerID != ""
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if !terminal {
		st.Phase = corev1.PodPending
		if r.st.InitDone && anyStarted {
			st.Phase = corev1.PodRunning
		}
	}
	if terminal {
		allReady = false
	}
	now := metav1.Now()
	cond := func(t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: now}
		if ok {
			c.Status = corev1.ConditionTrue
		} else {
			c.Reason = reason
		}
		for _, old := range st.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, r.st.VolumesReady, ""),
		cond(corev1.PodInitialized, r.st.InitDone, "ContainersNotInitialized"),
		cond(corev1.ContainersReady, allReady, "ContainersNotReady"),
		cond(corev1.PodReady, allReady, "ContainersNotReady"),
		cond(corev1.PodScheduled, true, ""),
	}
	if terminal {
		// A finished pod is no longer "ready to start containers" in the kubelet's sense either.
		st.Conditions[0] = cond(corev1.PodReadyToStartContainers, false, "")
		if st.Phase == corev1.PodSucceeded {
			st.Conditions[2].Reason, st.Conditions[3].Reason = "PodCompleted", "PodCompleted"
		}
	}
}

func ptr[T any](v T) *T { return &v }

// load reads the pods a previous run of the node left in the state folder and resumes the ones
// that have not finished.
func (p *Provider) load(ctx context.Context) error {
	entries, err := os.ReadDir(filepath.Join(p.cfg.StateDir, "pods"))
	if err != nil {
		return fmt.Errorf("read state folder: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(p.cfg.StateDir, "pods", e.Name())
		r := &podRun{p: p, dir: dir, exits: map[string]<-chan struct{}{}}
		if err := sandbox.ReadJSON(filepath.Join(dir, "state.json"), &r.st); err != nil || r.st.Pod == nil {
			if errors.Is(err, fs.ErrNotExist) || err == nil {
				err = errors.New("no pod in state.json")
			}
			log.G(ctx).WithError(err).WithField("dir", dir).Warn("ignoring unreadable pod state")
			continue
		}
		p.pods[key(r.st.Pod.Namespace, r.st.Pod.Name)] = r
		if r.st.IP != "" {
			if err := p.ips.Reserve(r.st.IP, dir); err != nil {
				log.G(ctx).WithError(err).WithField("pod", r.key()).Warn("cannot reserve the pod's address again")
			}
		}
		if r.terminal() {
			continue
		}
		log.G(ctx).WithField("pod", r.key()).Info("resuming pod from the state folder")
		r.start(context.WithoutCancel(ctx))
	}
	return nil
}

// KillAll kills every running container recorded under stateDir (for stopping a local cluster
// after its node) and returns how many it killed. Errors: the state folder cannot be read.
func KillAll(stateDir string) (int, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	killed := 0
	var errs []error
	for _, e := range entries {
		var st podState
		if err := sandbox.ReadJSON(filepath.Join(stateDir, "pods", e.Name(), "state.json"), &st); err != nil {
			continue
		}
		for _, cs := range st.Containers {
			if cs.Running && cs.Handle.Alive() {
				if err := cs.Handle.KillGroup(); err != nil {
					errs = append(errs, err)
					continue
				}
				killed++
			}
		}
	}
	return killed, errors.Join(errs...)
}
