package controllers

// Rollout and gate: the alias moves to a built revision, after its gating Evaluation under EvaluationGated.

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/vectorstore"
)

// reconcileRollout moves the alias to the desired revision once it is built and, under
// EvaluationGated, once its gating Evaluation passed.
func (r *IndexReconciler) reconcileRollout(ctx context.Context, st *indexState) (stepResult, error) {
	idx := st.idx
	rev := findRevision(idx, st.revision)
	if rev == nil {
		return stop, nil
	}
	active := findRevision(idx, idx.Status.ActiveRevision)
	if rev.Phase == ragopsv1alpha1.RevisionActive {
		// Make sure Weaviate agrees: the collection still exists (data lost, deleted by hand) and
		// the alias points at it (an alias deleted behind our back is restored).
		if ok, err := st.store.CollectionExists(ctx, rev.Collection); err != nil || !ok {
			if err == nil {
				err = &vectorstore.CollectionNotFoundError{Op: "check collection", Collection: rev.Collection}
			}
			return r.collectionError(ctx, st, rev, "read collection "+rev.Collection, err)
		}
		target, found, err := st.store.GetAlias(ctx, st.alias)
		if err != nil {
			return stopFor(r.Options.ProgressInterval).with(outcomeRetrying, ReasonWeaviateError, fmt.Sprintf("read alias %s: %v", st.alias, err)), nil
		}
		if !found || target != rev.Collection {
			if err := st.store.SetAlias(ctx, st.alias, rev.Collection); err != nil {
				return r.collectionError(ctx, st, rev, fmt.Sprintf("point alias %s at %s", st.alias, rev.Collection), err)
			}
		}
		idx.Status.Chunks = rev.Chunks
		metrics.SetActiveRevision(idx.Namespace, idx.Name, rev.Name)
		return proceedFor(jitter(r.Options.DriftInterval)), nil
	}
	if rev.Phase == ragopsv1alpha1.RevisionRejected {
		return stalled(ReasonGateFailed, rev.Message), nil
	}
	gated := idx.Spec.Rollout.Policy == ragopsv1alpha1.RolloutEvaluationGated && idx.Spec.Rollout.Gate != nil
	// A kept revision that served before (a revert) takes the alias back without a gate.
	if gated && rev.GateRecall == nil && active != nil {
		passed, msg, waiting, err := r.reconcileGate(ctx, st, rev, active)
		if err != nil || waiting != "" {
			return stop.with(outcomeProgressing, ReasonGating, waiting), err
		}
		if !passed {
			rev.Phase, rev.Message = ragopsv1alpha1.RevisionRejected, msg
			r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonGateFailed, "Rollout", "%s", msg)
			return stalled(ReasonGateFailed, msg), nil
		}
	}
	if err := st.store.SetAlias(ctx, st.alias, rev.Collection); err != nil {
		return r.collectionError(ctx, st, rev, fmt.Sprintf("point alias %s at %s", st.alias, rev.Collection), err)
	}
	from := idx.Status.ActiveRevision
	if active != nil {
		active.Phase = ragopsv1alpha1.RevisionReady
	}
	rev.Phase = ragopsv1alpha1.RevisionActive
	rev.Message = ""
	idx.Status.ActiveRevision = rev.Name
	idx.Status.Chunks = rev.Chunks
	metrics.SetActiveRevision(idx.Namespace, idx.Name, rev.Name)
	r.Events.Eventf(idx, nil, corev1.EventTypeNormal, "AliasMoved", "Rollout", "alias %s: revision %q -> %q", st.alias, from, rev.Name)
	log.FromContext(ctx).Info("alias moved", "alias", st.alias, "from", from, "to", rev.Name)
	return proceedFor(jitter(r.Options.DriftInterval)), nil
}

// collectionError handles a failed Weaviate call about a built revision's collection. When
// the collection is gone (Weaviate's data lost, deleted by hand) no alias can point at it
// again, so the revision is rebuilt under a new Job (Attempt + 1) and the Index is not Ready
// meanwhile; any other failure retries after ProgressInterval.
func (r *IndexReconciler) collectionError(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, op string, err error) (stepResult, error) {
	idx := st.idx
	var nf *vectorstore.CollectionNotFoundError
	if !errors.As(err, &nf) || nf.Collection != rev.Collection {
		return stopFor(r.Options.ProgressInterval).with(outcomeRetrying, ReasonWeaviateError, fmt.Sprintf("%s: %v", op, err)), nil
	}
	if err := r.restartBuild(ctx, st, rev, fmt.Sprintf("collection %s is missing from Weaviate", rev.Collection)); err != nil {
		return stop, err
	}
	r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonCollectionLost, "Rebuild", "revision %s: %s", rev.Name, rev.Message)
	return stopFor(time.Second).with(outcomeRetrying, ReasonCollectionLost, fmt.Sprintf("revision %s: %s", rev.Name, rev.Message)), nil
}

// gateEvaluationName names the gating Evaluation of a revision.
func gateEvaluationName(idx *ragopsv1alpha1.Index, rev string) string {
	return fmt.Sprintf("%s-gate-%s", objectName(idx.Name, 40), rev)
}

// reconcileGate runs the gating Evaluations of the candidate (and of the active revision
// when maxRegression needs its baseline) and decides. waiting, when not empty, says which
// Evaluation the rollout waits for (or failed to start, with err).
func (r *IndexReconciler) reconcileGate(ctx context.Context, st *indexState, cand, active *ragopsv1alpha1.RevisionStatus) (passed bool, msg, waiting string, err error) {
	idx := st.idx
	gate := idx.Spec.Rollout.Gate
	cand.Phase = ragopsv1alpha1.RevisionGating
	candRecall, ready, err := r.gateRecall(ctx, idx, cand.Name)
	if err != nil || !ready {
		return false, "", fmt.Sprintf("revision %s waits for its gating Evaluation %s", cand.Name, gateEvaluationName(idx, cand.Name)), err
	}
	cand.GateRecall = ptr.To(candRecall)
	if gate.MinRecall != nil && candRecall < *gate.MinRecall {
		return false, fmt.Sprintf("revision %s recall@10 %.4f is below minRecall %.4f; alias stays on %s", cand.Name, candRecall, *gate.MinRecall, active.Name), "", nil
	}
	if gate.MaxRegression != nil {
		base := active.GateRecall
		if base == nil {
			recall, ready, err := r.gateRecall(ctx, idx, active.Name)
			if err != nil || !ready {
				return false, "", fmt.Sprintf("measuring the active revision %s as the gate's baseline", active.Name), err
			}
			base = ptr.To(recall)
			active.GateRecall = base
		}
		if candRecall < *base-*gate.MaxRegression-1e-9 {
			return false, fmt.Sprintf("revision %s recall@10 %.4f regresses more than %.4f from the active revision %s (%.4f); alias stays", cand.Name, candRecall, *gate.MaxRegression, active.Name, *base), "", nil
		}
	}
	return true, "", "", nil
}

// gateRecall ensures the gating Evaluation of a revision exists and returns its recall@10
// once it is Ready.
func (r *IndexReconciler) gateRecall(ctx context.Context, idx *ragopsv1alpha1.Index, rev string) (float64, bool, error) {
	name := gateEvaluationName(idx, rev)
	var ev ragopsv1alpha1.Evaluation
	err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: name}, &ev)
	if apierrors.IsNotFound(err) {
		ev = ragopsv1alpha1.Evaluation{
			ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: name, Labels: map[string]string{
				LabelManagedBy: managedBy, LabelComponent: "gate", LabelOwner: idx.Name, LabelRevision: rev,
			}},
			Spec: ragopsv1alpha1.EvaluationSpec{
				IndexRef: ragopsv1alpha1.LocalObjectReference{Name: idx.Name}, Revision: rev,
				RerunOnRevisionChange: ptr.To(false), EvaluationParameters: *idx.Spec.Rollout.Gate.Evaluation.DeepCopy(),
			},
		}
		if err := controllerutil.SetControllerReference(idx, &ev, r.Scheme()); err != nil {
			return 0, false, err
		}
		return 0, false, r.Create(ctx, &ev)
	}
	if err != nil {
		return 0, false, err
	}
	if !conditions.IsReady(&ev) || ev.Status.RecallAt10 == nil || ev.Status.Revision != rev {
		return 0, false, nil
	}
	return *ev.Status.RecallAt10, true, nil
}
