package controllers

// Per-query results: the controller collects them from the evaluate pod's log into the
// Evaluation's results ConfigMap. Workers keep no API token (docs/security.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
)

// ConditionResultsStored says whether an Evaluation's per-query results of its last run
// are kept in its results ConfigMap (status.results), and why not when they are not.
const ConditionResultsStored = "ResultsStored"

// Reasons of the ResultsStored condition.
const (
	// ReasonResultsStored: the ConfigMap holds the last run's per-query results.
	ReasonResultsStored = "ResultsStored"
	// ReasonResultsCollecting: the Job succeeded; its results are being read from the pod's
	// log and written to the ConfigMap (a failure is retried with backoff, and the message
	// names it). The run's figures are published once they are stored.
	ReasonResultsCollecting = "Collecting"
	// ReasonResultsRefused: the worker refused to emit them (over the size bound, naming the
	// query count) or could not write them.
	ReasonResultsRefused = "ResultsRefused"
	// ReasonResultsUnavailable: the pod's log no longer holds them (pod gone, log rotated) or
	// holds other ones; a ragops.dev/retry runs the Evaluation again.
	ReasonResultsUnavailable = "ResultsUnavailable"
	// ReasonNoResults: the worker reported none (an image from before per-query results).
	ReasonNoResults = "NoResults"
)

// AnnotationResultsSHA256 on a results ConfigMap is the hex SHA-256 of the compressed
// results it holds: a reconcile that finds the one it was told about does not read the log
// again.
const AnnotationResultsSHA256 = "ragops.dev/results-sha256"

// resultsCollectTimeout is how long after its Job completed a pod's log may fail to be read
// (an unreachable kubelet) before the results count as unavailable.
const resultsCollectTimeout = 5 * time.Minute

// PodLogs opens the log of one container of a pod.
type PodLogs interface {
	// Open streams the container's log from its start. Errors: those of the API server
	// (NotFound for a pod that is gone).
	Open(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error)
}

// apiPodLogs reads logs through the API server's pods/log subresource.
type apiPodLogs struct{ cs kubernetes.Interface }

// NewPodLogs returns a PodLogs that reads pods/log through the API server at cfg (the
// manager's identity needs get on pods/log).
func NewPodLogs(cfg *rest.Config) (PodLogs, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return apiPodLogs{cs}, nil
}

func (l apiPodLogs) Open(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	return l.cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
}

// errResultsLost wraps the reasons a run's results cannot be collected any more.
var errResultsLost = errors.New("per-query results cannot be collected")

// resultsPending reports whether the last run's per-query results are still being collected.
func resultsPending(ev *ragopsv1alpha1.Evaluation) bool {
	c := meta.FindStatusCondition(ev.Status.Conditions, ConditionResultsStored)
	return c != nil && c.Status == metav1.ConditionUnknown
}

// markResults decides the ResultsStored condition in res.
func markResults(res *reconcile.Result, status metav1.ConditionStatus, reason, msg string) {
	*res = res.Set(ConditionResultsStored, status, reason, truncate(msg, 1024))
}

// storeResults keeps the per-query results ref describes (from the succeeded Job's
// termination message) in the Evaluation's results ConfigMap and says how it went in
// status.results and the ResultsStored condition. A ConfigMap already holding them (a retry,
// a restarted manager) is left as it is. A refusal or a lost log deletes the ConfigMap of an
// earlier run, so that no reader takes it for this run's. Errors are transient (reading the
// log, writing the ConfigMap): the caller publishes nothing of the run and retries with
// backoff. The conditions it decides (ResultsStored, QualityDropped) go into res.
func (r *EvaluationReconciler) storeResults(ctx context.Context, ev *ragopsv1alpha1.Evaluation, job *batchv1.Job, ref *plan.ResultsRef, res *reconcile.Result) error {
	name := results.ConfigMapName(ev.Name)
	lost := func(reason, msg string) error {
		ev.Status.Results = nil
		markResults(res, metav1.ConditionFalse, reason, msg)
		markQuality(ev, res, metav1.ConditionFalse, ReasonNotCompared, "the last run's per-query results are not stored: not compared with the baseline")
		return r.deleteResults(ctx, ev, name)
	}
	switch {
	case ref == nil:
		return lost(ReasonNoResults, fmt.Sprintf("Job %s reported no per-query results (a worker image without them): no paired comparison or non-inferiority gate", job.Name))
	case ref.Error != "":
		return lost(ReasonResultsRefused, fmt.Sprintf("per-query results of %d queries not stored: %s", ref.Queries, ref.Error))
	}
	stored := func() error {
		ev.Status.Results = &ragopsv1alpha1.PerQueryResults{ConfigMap: name, Queries: int32(ref.Queries), Bytes: int64(ref.Bytes), SHA256: ref.SHA256}
		markResults(res, metav1.ConditionTrue, ReasonResultsStored, fmt.Sprintf("ConfigMap %s holds the per-query results of %d queries (%d bytes gzip-compressed)", name, ref.Queries, ref.Bytes))
		return nil
	}
	var cm corev1.ConfigMap
	err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: name}, &cm)
	switch {
	case err == nil && !metav1.IsControlledBy(&cm, ev):
		ev.Status.Results = nil
		markResults(res, metav1.ConditionFalse, ReasonResultsUnavailable, fmt.Sprintf("ConfigMap %s exists and is not this Evaluation's: not overwritten (delete or rename it)", name))
		return nil
	case err == nil && cm.Annotations[AnnotationResultsSHA256] == ref.SHA256:
		// The same results as stored (a retry, a restarted manager, a run that scored alike):
		// this run is still compared with the baseline.
		if set, derr := results.Decode(cm.BinaryData[results.ConfigMapKey]); derr == nil {
			if err := r.compareWithBaseline(ctx, ev, res, set, cm.BinaryData[results.ConfigMapKey], ref.SHA256); err != nil {
				return err
			}
		}
		return stored()
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	blob, set, err := r.readResults(ctx, ev, job, ref)
	if err != nil {
		if errors.Is(err, errResultsLost) {
			return lost(ReasonResultsUnavailable, err.Error()+"; set the ragops.dev/retry annotation to run the Evaluation again")
		}
		if job.Status.CompletionTime != nil && time.Since(job.Status.CompletionTime.Time) > resultsCollectTimeout {
			return lost(ReasonResultsUnavailable, fmt.Sprintf("%v (still failing %s after the Job completed); set the ragops.dev/retry annotation to run the Evaluation again", err, resultsCollectTimeout))
		}
		return fmt.Errorf("read the per-query results from the log of Job %s: %w", job.Name, err)
	}
	want := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ev.Namespace, Name: name,
		Labels:      workload.ObjectLabels("results", ev.Name, ev.Status.Revision),
		Annotations: map[string]string{AnnotationResultsSHA256: ref.SHA256}},
		BinaryData: map[string][]byte{results.ConfigMapKey: blob}}
	if err := controllerutil.SetControllerReference(ev, &want, r.Scheme()); err != nil {
		return err
	}
	if err := r.compareWithBaseline(ctx, ev, res, set, blob, ref.SHA256); err != nil {
		return err
	}
	if cm.Name == "" {
		if err := r.Create(ctx, &want); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", name, err) // AlreadyExists included: the next reconcile reads what is there
		}
		return stored()
	}
	base := cm.DeepCopy()
	cm.Labels, cm.Annotations = want.Labels, want.Annotations
	cm.Data, cm.BinaryData = nil, want.BinaryData
	if err := r.Patch(ctx, &cm, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", name, err)
	}
	return stored()
}

// readResults reads the frame ref describes from the log of the Job's succeeded pod and
// checks it: its length and SHA-256 are ref's, it decodes, and it is this Evaluation's.
// It returns the encoded set and the set. Errors wrapping errResultsLost are final for this
// run; others transient.
func (r *EvaluationReconciler) readResults(ctx context.Context, ev *ragopsv1alpha1.Evaluation, job *batchv1.Job, ref *plan.ResultsRef) ([]byte, *results.Set, error) {
	pod, err := succeededPod(ctx, r.Client, job)
	if err != nil || pod == "" {
		return nil, nil, cmpErr(err, fmt.Errorf("%w: Job %s has no succeeded pod left to read them from", errResultsLost, job.Name))
	}
	container := job.Spec.Template.Spec.Containers[0].Name
	rc, err := r.PodLogs.Open(ctx, job.Namespace, pod, container)
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("%w: the log of pod %s is gone: %v", errResultsLost, pod, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open the log of pod %s: %w", pod, err)
	}
	defer func() { _ = rc.Close() }()
	blob, err := results.ReadFrame(rc, ref.SHA256)
	if errors.Is(err, results.ErrNoFrame) {
		return nil, nil, fmt.Errorf("%w: the log of pod %s does not hold the %d bytes with SHA-256 %s its result names (%v)", errResultsLost, pod, ref.Bytes, ref.SHA256, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(blob) != ref.Bytes {
		return nil, nil, fmt.Errorf("%w: the frame in the log of pod %s is %d bytes, its result says %d", errResultsLost, pod, len(blob), ref.Bytes)
	}
	set, err := results.Decode(blob)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: pod %s: %v", errResultsLost, pod, err)
	}
	if set.UID != "" && set.UID != string(ev.UID) || len(set.Queries) != ref.Queries {
		return nil, nil, fmt.Errorf("%w: pod %s logged the results of %d queries of Evaluation UID %q, not of %d queries of this one (%s)", errResultsLost, pod, len(set.Queries), set.UID, ref.Queries, ev.UID)
	}
	return blob, set, nil
}

// cmpErr returns err when it is not nil, else alt.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// succeededPod names the newest pod of job (jobPods) whose main container exited 0, "" when
// none.
func succeededPod(ctx context.Context, c client.Reader, job *batchv1.Job) (string, error) {
	pods, err := jobPods(ctx, c, job)
	if err != nil {
		return "", err
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return b.CreationTimestamp.Time.Compare(a.CreationTimestamp.Time) })
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
				return p.Name, nil
			}
		}
	}
	return "", nil
}

// deleteResults deletes the Evaluation's results ConfigMap when it is the Evaluation's.
func (r *EvaluationReconciler) deleteResults(ctx context.Context, ev *ragopsv1alpha1.Evaluation, name string) error {
	var cm corev1.ConfigMap
	if err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: name}, &cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(&cm, ev) {
		return nil
	}
	return client.IgnoreNotFound(r.Delete(ctx, &cm, client.Preconditions{UID: &cm.UID}))
}

// queryValues are one Evaluation's per-query values of a metric, in the order of its
// results (the dataset's query order), with the query IDs they belong to.
type queryValues struct {
	uid         string
	fingerprint string
	ids         []string
	values      []float64
}

// perQueryValues reads ev's per-query values of metric (a results column name such as
// "recall@10" or "spanHit@3") from its results ConfigMap, checked against status.results
// (SHA-256) and ev's UID. what names ev in the messages. why is not empty when there is
// nothing to read: none were reported, the ConfigMap is gone or holds other results, or the
// metric is missing. Errors: errResultsCollecting while they are being collected; transient
// reads.
func perQueryValues(ctx context.Context, rd client.Reader, ev *ragopsv1alpha1.Evaluation, metric, what string) (v queryValues, why string, err error) {
	if resultsPending(ev) {
		return v, "", fmt.Errorf("%s: %w", what, errResultsCollecting)
	}
	ref := ev.Status.Results
	if ref == nil {
		why := "none were reported"
		if c := meta.FindStatusCondition(ev.Status.Conditions, ConditionResultsStored); c != nil {
			why = c.Message
		}
		return v, fmt.Sprintf("%s has no per-query results (%s)", what, why), nil
	}
	var cm corev1.ConfigMap
	if err := rd.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ref.ConfigMap}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return v, fmt.Sprintf("the per-query results of %s are gone (ConfigMap %s)", what, ref.ConfigMap), nil
		}
		return v, "", err
	}
	if !metav1.IsControlledBy(&cm, ev) || cm.Annotations[AnnotationResultsSHA256] != ref.SHA256 {
		return v, fmt.Sprintf("ConfigMap %s does not hold the per-query results %s reports (SHA-256 %.12s)", ref.ConfigMap, what, ref.SHA256), nil
	}
	set, err := results.Decode(cm.BinaryData[results.ConfigMapKey])
	if err != nil {
		return v, fmt.Sprintf("ConfigMap %s: %v", ref.ConfigMap, err), nil
	}
	if set.UID != string(ev.UID) {
		return v, fmt.Sprintf("ConfigMap %s holds the results of Evaluation UID %q, not of %s", ref.ConfigMap, set.UID, what), nil
	}
	ids, values, err := set.Column(metric)
	if err != nil {
		return v, fmt.Sprintf("ConfigMap %s: %v", ref.ConfigMap, err), nil
	}
	return queryValues{uid: string(ev.UID), fingerprint: set.Fingerprint, ids: ids, values: values}, "", nil
}
