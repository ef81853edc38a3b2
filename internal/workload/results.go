package workload

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ragops/ragops/internal/plan"
)

// State summarises a Job.
type State int

const (
	Running State = iota
	Succeeded
	Failed
)

// StateOf returns the state of a Job from its conditions, and for a failed Job its Failed
// condition as "<reason>: <message>".
func StateOf(job *batchv1.Job) (State, string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Succeeded, ""
		case batchv1.JobFailed:
			return Failed, fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return Running, ""
}

// PodFailure is why one pod of a Job failed: Text names the pod, its exit code and the
// worker's error; Reason is the worker's typed reason (empty for a plain failure).
type PodFailure struct {
	Text   string
	Reason plan.FailureReason
}

// PodResults reads the termination messages of a Job's pods: succeeded holds the result of
// each terminated worker container that exited 0, keyed by completion index ("0" for
// non-indexed Jobs; of two pods of one index the newer wins); failed holds the failures of
// failed containers and init containers, oldest pod first. pods is sorted in place by
// creation time.
func PodResults(pods []corev1.Pod) (succeeded map[string]string, failed []PodFailure) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
	succeeded = map[string]string{}
	for _, p := range pods {
		idx := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if idx == "" {
			idx = "0"
		}
		for _, cs := range p.Status.InitContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				msg := strings.TrimSpace(t.Message)
				if msg == "" {
					msg = t.Reason
				}
				failed = append(failed, PodFailure{Text: fmt.Sprintf("pod %s: init container %s exited with code %d: %s", p.Name, cs.Name, t.ExitCode, msg)})
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				continue
			}
			if t.ExitCode == 0 {
				succeeded[idx] = t.Message
			} else {
				msg, reason := ResultError(t.Message)
				if msg == "" {
					msg = t.Reason
				}
				failed = append(failed, PodFailure{Text: fmt.Sprintf("pod %s exited with code %d: %s", p.Name, t.ExitCode, msg), Reason: reason})
			}
		}
	}
	return succeeded, failed
}

// ResultError reads a failed worker's termination message: the "error" and "reason" fields
// of its JSON result, or the trimmed message itself when it is no such result (a crash).
func ResultError(msg string) (string, plan.FailureReason) {
	var r struct {
		Error  string             `json:"error"`
		Reason plan.FailureReason `json:"reason"`
	}
	if json.Unmarshal([]byte(msg), &r) == nil && r.Error != "" {
		return r.Error, r.Reason
	}
	return strings.TrimSpace(msg), ""
}

// ResultKey is the plan ConfigMap key that keeps a shard's result.
func ResultKey(shard string) string { return "result-" + shard + ".json" }

// SavedResults returns the shard results a plan ConfigMap keeps (keys ResultKey), by shard.
func SavedResults(cm *corev1.ConfigMap) map[string]string {
	out := map[string]string{}
	for k, v := range cm.Data {
		if shard, found := strings.CutPrefix(k, "result-"); found {
			out[strings.TrimSuffix(shard, ".json")] = v
		}
	}
	return out
}

// Indexes parses a Job's list of completion indexes (status.completedIndexes and
// failedIndexes: "1,3-5,7", ascending) into the indexes; "" is none.
//
// Errors: a malformed list.
func Indexes(list string) ([]int, error) {
	var out []int
	if list == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("job index list %q: bad index %q", list, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("job index list %q: bad range %q", list, part)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
