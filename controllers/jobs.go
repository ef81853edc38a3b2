package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/workload"
)

// jobOwnerKey indexes Jobs by their controlling owner (jobOwnerIndexer).
const jobOwnerKey = ".metadata.controller"

// jobOwnerIndexer indexes Jobs by "<Kind>/<name>" of their controlling owner.
func jobOwnerIndexer(o client.Object) []string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || !strings.HasPrefix(ref.APIVersion, ragopsv1alpha1.GroupVersion.Group+"/") {
		return nil
	}
	return []string{ref.Kind + "/" + ref.Name}
}

// JobConflictError is a Job or plan ConfigMap that has a workload's name but is not
// controlled by the workload's owner: ragops never adopts (and never reads the results of)
// an object another owner controls.
type JobConflictError struct {
	Kind, Name string
	// Owner is the object's controller ("Kind/name"), or "" when it has none.
	Owner string
}

func (e *JobConflictError) Error() string {
	owner := "no controller"
	if e.Owner != "" {
		owner = "controller " + e.Owner
	}
	return fmt.Sprintf("%s %s exists with %s; delete or rename it", e.Kind, e.Name, owner)
}

func conflictOf(kind string, o metav1.Object) error {
	e := &JobConflictError{Kind: kind, Name: o.GetName()}
	if ref := metav1.GetControllerOf(o); ref != nil {
		e.Owner = ref.Kind + "/" + ref.Name
	}
	return e
}

// ensureJob creates the plan ConfigMap and the Job when they do not exist and returns the Job.
// An existing Job (or ConfigMap) of that name is used only when the owner controls it;
// otherwise the error is a *JobConflictError. live reads from the API server: a Job another
// owner made is outside the manager's label-scoped cache.
func ensureJob(ctx context.Context, c client.Client, live client.Reader, w *workload.Workload) (*batchv1.Job, error) {
	owner := w.Owner
	var job batchv1.Job
	err := c.Get(ctx, client.ObjectKey{Namespace: w.Owner.GetNamespace(), Name: w.Name}, &job)
	if apierrors.IsNotFound(err) {
		// The cache can lag behind our own create: ask the API server before the plan
		// ConfigMap of a Job that may exist is rewritten.
		err = live.Get(ctx, client.ObjectKey{Namespace: w.Owner.GetNamespace(), Name: w.Name}, &job)
	}
	if err == nil {
		if !metav1.IsControlledBy(&job, owner) {
			return nil, conflictOf("Job", &job)
		}
		return &job, nil
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	cm, sum, err := w.PlanConfigMap()
	if err != nil {
		return nil, err
	}
	if err := controllerutil.SetControllerReference(owner, cm, c.Scheme()); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		// Left by a Job that went another way than deleteJob (kubectl delete, a TTL, a failed
		// create): its plan and results are not this Job's, so it is rewritten whole.
		var old corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &old); err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(&old, owner) {
			return nil, conflictOf("ConfigMap", &old)
		}
		old.Labels, old.Data, old.BinaryData = cm.Labels, cm.Data, nil
		old.OwnerReferences = cm.OwnerReferences
		if err := c.Update(ctx, &old); err != nil {
			return nil, fmt.Errorf("rewrite plan ConfigMap %s: %w", w.Name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("create plan ConfigMap %s: %w", w.Name, err)
	}
	w.Trace = tracing.JobEnv(ctx) // the pods' spans are children of this reconcile's
	j := w.Job()
	ctr := &j.Spec.Template.Spec.Containers[0]
	ctr.Env = append(ctr.Env, corev1.EnvVar{Name: plan.EnvPlanSHA256, Value: sum})
	if err := controllerutil.SetControllerReference(owner, j, c.Scheme()); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, j); apierrors.IsAlreadyExists(err) {
		// Another reconcile on a stale cache created it first (use it if ours), or someone
		// else did (not in the cache, so ask the API server).
		if err := live.Get(ctx, client.ObjectKeyFromObject(j), &job); err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(&job, owner) {
			return nil, conflictOf("Job", &job)
		}
		return &job, nil
	} else if err != nil {
		return nil, fmt.Errorf("create Job %s: %w", w.Name, err)
	}
	tracing.Keep(ctx, "job created")
	// The plan belongs to its Job too: the garbage collector removes it with the Job, however
	// the Job goes.
	if err := controllerutil.SetOwnerReference(j, cm, c.Scheme()); err == nil {
		owners, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": cm.OwnerReferences}})
		if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, owners)); err != nil {
			log.FromContext(ctx).Info("plan ConfigMap not owned by its Job yet", "configMap", cm.Name, "error", err.Error())
		}
	}
	return j, nil
}

// deleteJob deletes a Job and its pods and its plan ConfigMap. Propagation is foreground:
// the Job stays (with a deletionTimestamp) until its pods are gone, so "no Job" means no pod
// of it still writes.
func deleteJob(ctx context.Context, c client.Client, ns, name string) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return client.IgnoreNotFound(c.Delete(ctx, cm))
}

// podResults reads the termination messages of the Job's pods (jobPods, workload.PodResults).
func podResults(ctx context.Context, c client.Reader, job *batchv1.Job) (succeeded map[string]string, failed []workload.PodFailure, err error) {
	pods, err := jobPods(ctx, c, job)
	if err != nil {
		return nil, nil, err
	}
	succeeded, failed = workload.PodResults(pods)
	return succeeded, failed, nil
}

// saveResults copies the termination messages of a Job's succeeded pods into its plan
// ConfigMap (keys result-<shard>.json), so results survive the pods (garbage-collected, or
// evicted with their node) and returns every saved result by shard.
func saveResults(ctx context.Context, c client.Client, job *batchv1.Job) (map[string]string, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &cm); err != nil {
		return nil, fmt.Errorf("plan ConfigMap of Job %s: %w", job.Name, err)
	}
	if !sameController(&cm, job) {
		return nil, conflictOf("ConfigMap", &cm)
	}
	ok, _, err := podResults(ctx, c, job)
	if err != nil {
		return nil, err
	}
	out := workload.SavedResults(&cm)
	base := cm.DeepCopy()
	changed := false
	for shard, msg := range ok {
		if _, had := out[shard]; !had {
			out[shard] = msg
			cm.Data[workload.ResultKey(shard)] = msg
			changed = true
		}
	}
	if changed {
		if err := c.Patch(ctx, &cm, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("save shard results of Job %s: %w", job.Name, err)
		}
	}
	return out, nil
}

// sameController reports whether a and b have the same controlling owner.
func sameController(a, b metav1.Object) bool {
	ra, rb := metav1.GetControllerOf(a), metav1.GetControllerOf(b)
	return ra != nil && rb != nil && ra.UID == rb.UID
}

// jobFailure returns why a failed Job failed: the error its last failed pod reported in its
// termination message, else the Job's Failed condition. Callers pass the API reader: the
// Job's Failed condition can reach the cache before its pods do, and the reason read once is
// what the revision keeps.
func jobFailure(ctx context.Context, c client.Reader, job *batchv1.Job, condition string) (string, plan.FailureReason, error) {
	_, failed, err := podResults(ctx, c, job)
	if err != nil {
		return "", "", err
	}
	if len(failed) > 0 {
		f := failed[len(failed)-1]
		return f.Text, f.Reason, nil
	}
	return condition, "", nil
}

// enqueueReferrers maps an object to the objects of its namespace whose field index `field`
// holds its name (a Corpus to the Indexes that use it, say). newList returns an empty list of
// the referring kind.
func enqueueReferrers(c client.Client, newList func() client.ObjectList, field string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}); err != nil {
			return nil
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil
		}
		reqs := make([]ctrl.Request, 0, len(items))
		for _, it := range items {
			if obj, ok := it.(client.Object); ok {
				reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
		}
		return reqs
	})
}

// otlpEnv is the manager's OTLP settings (tracing.JobEnv without a trace context) for the
// model servers it runs, so their request spans go to the same backend; none while tracing is off.
func otlpEnv() []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, kv := range tracing.JobEnv(context.Background()) {
		env = append(env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
	}
	return env
}
