package controllers

// Delete: the alias and every revision collection go before the finalizer is removed.

import (
	"context"

	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=delete

// stopRunningJobs deletes the Index's running Jobs (foreground: each goes once its pods are
// gone) and describes those not gone yet. After JobStopTimeout a Job whose pods the API
// server no longer lists counts as stopped (its own removal may lag behind the garbage
// collector). Pods
// still there JobStopTimeout after the Index's deletion (stuck Terminating on a lost node)
// are force-deleted, with a Warning Event naming them and their nodes: a process on a node
// that cannot be reached may still run, and a person should look at that node.
// forced says whether pods were force-deleted.
func (r *IndexReconciler) stopRunningJobs(ctx context.Context, idx *ragopsv1alpha1.Index) (waiting []string, forced bool, err error) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(idx.Namespace), client.MatchingFields{jobOwnerKey: "Index/" + idx.Name}); err != nil {
		return nil, false, err
	}
	overdue := time.Since(idx.DeletionTimestamp.Time) >= r.Options.JobStopTimeout
	for _, j := range jobs.Items {
		if !metav1.IsControlledBy(&j, idx) {
			continue
		}
		if s, _ := workload.StateOf(&j); s != workload.Running {
			continue
		}
		if j.DeletionTimestamp.IsZero() {
			if err := deleteJob(ctx, r.Client, j.Namespace, j.Name); err != nil {
				return nil, false, err
			}
		}
		pods, err := jobPods(ctx, r.Options.reader(r.Client), &j)
		if err != nil {
			return nil, false, err
		}
		if len(pods) == 0 {
			if overdue {
				continue // its pods are gone; the Job's own removal lags (or no collector runs)
			}
			waiting = append(waiting, j.Name)
			continue
		}
		var stuck []string
		for _, p := range pods {
			stuck = append(stuck, fmt.Sprintf("pod %s on node %q", p.Name, p.Spec.NodeName))
		}
		if overdue {
			deleted := 0
			for _, p := range pods {
				err := r.Delete(ctx, &p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
				if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
					continue // gone already (an earlier reconcile forced it)
				} else if err != nil {
					return nil, false, err
				}
				deleted++
			}
			forced = true
			if deleted > 0 {
				r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonJobsNotStopping, "Delete",
					"Job %s: %s did not stop within %s of the Index's deletion; force-deleted (check the node: a process there may still run)",
					j.Name, strings.Join(stuck, ", "), r.Options.JobStopTimeout)
			}
		}
		waiting = append(waiting, fmt.Sprintf("%s (%s)", j.Name, strings.Join(stuck, ", ")))
	}
	return waiting, forced, nil
}

// reconcileDelete stops running Jobs, then removes the alias, then every revision
// collection, then the access endpoint's objects no other Index needs, then the finalizer. While Job pods run, or with Weaviate unreachable (retried
// with backoff), its outcome is DeletionBlocked; after FinalizerTimeout it gives up with a
// Warning event naming what is left behind. Once the finalizer is gone the outcome is
// deleted: the status no longer claims to serve while others' finalizers hold the object.
func (r *IndexReconciler) reconcileDelete(ctx context.Context, idx *ragopsv1alpha1.Index) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(idx, Finalizer) {
		return reconcile.Stop, nil
	}
	skip := idx.Annotations[AnnotationSkipCleanup] == "true"
	if !skip {
		// A running build or sync pod could write into (or, starting, recreate) a collection
		// deleted under it: stop the running Jobs and wait until their pods are gone.
		running, forced, err := r.stopRunningJobs(ctx, idx)
		if err != nil {
			return reconcile.Stop, err
		}
		if forced {
			return reconcile.StopFor(2*time.Second).With(reconcile.OutcomeDeletionBlocked, ReasonJobsNotStopping,
				fmt.Sprintf("pods did not stop within %s and were force-deleted; waiting for Job(s) %s to go", r.Options.JobStopTimeout, strings.Join(running, ", "))), nil
		}
		if len(running) > 0 {
			return reconcile.StopFor(2*time.Second).With(reconcile.OutcomeDeletionBlocked, ReasonDeleting,
				fmt.Sprintf("waiting for the pods of Job(s) %s to stop before deleting the collections (force-deleted %s after the Index's deletion)",
					strings.Join(running, ", "), r.Options.JobStopTimeout)), nil
		}
	}
	var leftovers []string
	if !skip {
		err := r.cleanupWeaviate(ctx, idx)
		if err != nil {
			age := time.Since(idx.DeletionTimestamp.Time)
			if age < r.Options.FinalizerTimeout {
				return reconcile.Stop.With(reconcile.OutcomeDeletionBlocked, ReasonCleanupFailed,
						fmt.Sprintf("cannot delete Weaviate alias/collections yet (retrying with backoff; annotate %s=true to skip): %v", AnnotationSkipCleanup, err)),
					fmt.Errorf("index %s/%s cleanup: %w", idx.Namespace, idx.Name, err)
			}
			for _, rev := range idx.Status.Revisions {
				leftovers = append(leftovers, rev.Collection)
			}
			r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonCleanupFailed, "Delete", "gave up after %s: left behind alias %s and collections %s: %v",
				r.Options.FinalizerTimeout, idx.Status.Alias, strings.Join(leftovers, ","), err)
		}
	}
	if err := r.releaseAccessEndpoint(ctx, idx); err != nil {
		return reconcile.Stop, err
	}
	metrics.ForgetIndex(idx.Namespace, idx.Name)
	base := idx.DeepCopy()
	controllerutil.RemoveFinalizer(idx, Finalizer)
	if err := r.Patch(ctx, idx, client.MergeFrom(base)); err != nil {
		return reconcile.Stop, err
	}
	// Other finalizers may keep the object: its status must not claim it still serves.
	idx.Status.ActiveRevision, idx.Status.Chunks, idx.Status.Build, idx.Status.Progress = "", 0, nil, ""
	msg := fmt.Sprintf("deleted: alias %s and its collections are gone", idx.Status.Alias)
	if skip {
		msg = fmt.Sprintf("deleted: Weaviate left alone (%s=true)", AnnotationSkipCleanup)
	} else if len(leftovers) > 0 {
		msg = fmt.Sprintf("deleted: cleanup gave up, left behind alias %s and collections %s", idx.Status.Alias, strings.Join(leftovers, ","))
	}
	if len(idx.Finalizers) > 0 {
		msg += fmt.Sprintf("; waiting for finalizers %s", strings.Join(idx.Finalizers, ","))
	}
	return reconcile.Stop.With(reconcile.OutcomeDeleted, ReasonDeleting, msg), nil
}

func (r *IndexReconciler) cleanupWeaviate(ctx context.Context, idx *ragopsv1alpha1.Index) error {
	apiKey := ""
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		var sec corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: ref.Name}, &sec); err != nil {
			return fmt.Errorf("spec.weaviate.apiKeySecretRef: Secret %q cannot be read (restore it, or annotate %s=true): %w", ref.Name, AnnotationSkipCleanup, err)
		}
		apiKey = string(sec.Data[ref.Key])
	}
	ca, msg, _, err := weaviateCABundle(ctx, r.Client, idx.Namespace, idx.Spec.Weaviate)
	if err != nil {
		return err
	}
	if msg != "" {
		return fmt.Errorf("%s (restore it, or annotate %s=true)", msg, AnnotationSkipCleanup)
	}
	store, err := r.Options.NewStore(idx.Spec.Weaviate, apiKey, ca)
	if err != nil {
		return err
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.deleteWeaviateReader(cctx, idx, apiKey); err != nil {
		return err
	}
	if err := store.DeleteAlias(cctx, alias); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, rev := range idx.Status.Revisions {
		names[rev.Collection] = true
	}
	if idx.Status.Revision != "" {
		if n, err := vectorstore.CollectionName(idx.Namespace, idx.Name, idx.Status.Revision); err == nil {
			names[n] = true
		}
	}
	for n := range names {
		if err := store.DeleteCollection(cctx, n); err != nil {
			return err
		}
	}
	return nil
}
