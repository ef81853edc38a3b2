package controllers

// Prune: revisions beyond revisionHistoryLimit go, with their collections, once no Job writes to them.

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
)

// pruneRevisions keeps RevisionHistoryLimit revisions (the active and the desired one always
// among them) and deletes the collections, Jobs and gating Evaluations of the rest.
func (r *IndexReconciler) pruneRevisions(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	limit := int(max(idx.Spec.Rollout.RevisionHistoryLimit, 1))
	revs := idx.Status.Revisions
	sort.SliceStable(revs, func(i, j int) bool {
		ti, tj := revs[i].CreationTime, revs[j].CreationTime
		if ti == nil || tj == nil {
			return tj == nil && ti != nil
		}
		return tj.Before(ti)
	})
	kept := map[string]bool{st.revision: true}
	if a := idx.Status.ActiveRevision; a != "" {
		kept[a] = true
	}
	if d := findRevision(idx, st.revision); d != nil && d.CopyFrom != "" && d.Phase == ragopsv1alpha1.RevisionBuilding {
		kept[d.CopyFrom] = true // the desired revision is being filled from it
	}
	for _, rev := range revs {
		if len(kept) >= limit {
			break
		}
		kept[rev.Name] = true
	}
	var keep []ragopsv1alpha1.RevisionStatus
	for i, rev := range revs {
		if kept[rev.Name] {
			if rev.Name != idx.Status.ActiveRevision && rev.Name != st.revision {
				// A kept revision that no longer syncs needs none of its finished sync Jobs.
				if err := r.deleteFinishedSyncJobs(ctx, st, &revs[i]); err != nil {
					return reconcile.Stop, err
				}
			}
			keep = append(keep, rev)
			continue
		}
		if busy, err := r.jobsStillRun(ctx, idx, rev.Name); err != nil || busy {
			// A Job (or its pods) may still write into the collection: prune it later.
			keep = append(keep, rev)
			continue
		}
		if err := st.store.DeleteCollection(ctx, rev.Collection); err != nil {
			log.FromContext(ctx).Info("revision collection not deleted yet", "collection", rev.Collection, "error", err.Error())
			keep = append(keep, rev)
			continue
		}
		_ = deleteJob(ctx, r.Client, idx.Namespace, workload.BuildJobName(idx, &rev))
		if jobs, err := r.revisionJobs(ctx, idx, rev.Name); err == nil {
			for _, j := range jobs {
				_ = deleteJob(ctx, r.Client, j.Namespace, j.Name) // its syncs and their plan ConfigMaps
			}
		}
		_ = client.IgnoreNotFound(r.Delete(ctx, &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: gateEvaluationName(idx, rev.Name)}}))
		metrics.ForgetRevision(idx.Namespace, idx.Name, rev.Name)
		st.events.Eventf(idx, nil, corev1.EventTypeNormal, "RevisionPruned", "Prune", "revision %s and collection %s deleted (revisionHistoryLimit %d)", rev.Name, rev.Collection, limit)
	}
	idx.Status.Revisions = keep
	return reconcile.Proceed, nil
}

// jobsStillRun reports whether a Job of the revision has not finished, deleted or not: its
// pods may still write. A finished Job (Complete or Failed, which the Job controller sets
// only once its pods have terminated) writes nothing, even while its deletion waits on
// finalizers or the garbage collector.
func (r *IndexReconciler) jobsStillRun(ctx context.Context, idx *ragopsv1alpha1.Index, rev string) (bool, error) {
	jobs, err := r.revisionJobs(ctx, idx, rev)
	if err != nil {
		return false, err
	}
	for _, j := range jobs {
		if s, _ := workload.StateOf(&j); s == workload.Running {
			return true, nil
		}
	}
	return false, nil
}
