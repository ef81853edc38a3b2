package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/winner"
	"github.com/ragops/ragops/internal/reconcile"
)

// LabelPromotedBy on a ChunkingStrategy names the Experiment whose winner it is
// (spec.promote): the strategy is not owned by the Experiment and outlives it.
const LabelPromotedBy = "ragops.dev/promoted-by"

// promote applies a finished Experiment's winner to spec.promote.indexRef once per
// generation, and only on evidence: the winner must be told apart from the baseline, better,
// by the adjusted comparison (winner.Evidence at tieAlpha); a winner tied with the baseline
// leaves the Index as it is (Promoted=False, NotBetterThanBaseline). It creates the winner's
// ChunkingStrategy under its trial's strategy name (or reuses one of that name with the same
// spec) and merge-patches the Index's strategyRef, model, embedder precision and vector
// index (winner.Result.IndexPatch; what an Index cannot hold, the retrieval variant, is
// named in the message); the Index then rolls out through its own rollout policy. The
// Promoted condition says what happened; a strategy of that name with another spec, an
// Index that is missing or one of the Experiment's own trials leave the Index untouched.
// Errors: API failures.
func (r *ExperimentReconciler) promote(ctx context.Context, exp *ragopsv1alpha1.Experiment, ch *experimentChildren) (reconcile.Result, error) {
	pr := exp.Spec.Promote
	if pr == nil {
		return reconcile.Proceed.Remove(ragopsv1alpha1.ConditionPromoted), nil
	}
	if p := exp.Status.Promotion; p != nil && p.ObservedGeneration == exp.Generation && p.Index == pr.IndexRef.Name {
		return reconcile.Proceed, nil // done for this generation; the condition stays as set
	}
	notPromoted := func(reason, msg string) (reconcile.Result, error) {
		return reconcile.Proceed.Set(ragopsv1alpha1.ConditionPromoted, metav1.ConditionFalse, reason, msg), nil
	}
	opt := exp.Status.CurrentOptimalTrial
	if opt == nil {
		return notPromoted(ragopsv1alpha1.ReasonNoWinner, "no candidate was measured: nothing to apply to spec.promote.indexRef")
	}
	better, reason, evidence := winner.Evidence(exp, tieAlpha)
	if !better {
		return notPromoted(reason, fmt.Sprintf("%s; Index %s is left as it is", evidence, pr.IndexRef.Name))
	}
	if _, own := ch.indexes[pr.IndexRef.Name]; own {
		return notPromoted(ragopsv1alpha1.ReasonPromotionConflict, fmt.Sprintf("spec.promote.indexRef.name: Index %q is one of this Experiment's trials; name the Index that serves", pr.IndexRef.Name))
	}
	var target ragopsv1alpha1.Index
	if err := r.Get(ctx, client.ObjectKey{Namespace: exp.Namespace, Name: pr.IndexRef.Name}, &target); err != nil {
		if apierrors.IsNotFound(err) {
			return notPromoted(ragopsv1alpha1.ReasonPromotionIndexNotFound, fmt.Sprintf("spec.promote.indexRef.name: Index %q not found", pr.IndexRef.Name))
		}
		return reconcile.Stop, err
	}
	trial, ok := ch.indexes[opt.Trial]
	if !ok {
		return notPromoted(ragopsv1alpha1.ReasonNoWinner, fmt.Sprintf("the winner's Index %s is gone", opt.Trial))
	}
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := r.Get(ctx, client.ObjectKey{Namespace: exp.Namespace, Name: trial.Spec.StrategyRef.Name}, &cs); err != nil {
		return reconcile.Stop, fmt.Errorf("the winner's ChunkingStrategy: %w", err)
	}
	res, err := winner.FromObjects(exp, trial, &cs)
	if err != nil {
		return reconcile.Stop, err
	}
	if msg, err := r.ensurePromotedStrategy(ctx, exp, res.Strategy); err != nil || msg != "" {
		if err != nil {
			return reconcile.Stop, err
		}
		return notPromoted(ragopsv1alpha1.ReasonPromotionConflict, msg)
	}
	if err := r.Patch(ctx, &target, client.RawPatch(types.MergePatchType, res.IndexPatch)); err != nil {
		if apierrors.IsInvalid(err) {
			return notPromoted(ragopsv1alpha1.ReasonPromotionConflict, fmt.Sprintf("Index %s refused the winner's patch: %v", target.Name, err))
		}
		return reconcile.Stop, err
	}
	exp.Status.Promotion = &ragopsv1alpha1.PromotionStatus{Index: target.Name, Strategy: res.Strategy.Name, Model: trial.Spec.Model.Name,
		Trial: res.Trial, Retrieval: res.Retrieval, ObservedGeneration: exp.Generation, Time: metav1.Now()}
	msg := fmt.Sprintf("Index %s now names strategy %s, model %s, the trial's precision and vector index (trial %s, %s, %s); it rolls out through its own rollout policy",
		target.Name, res.Strategy.Name, trial.Spec.Model.Name, res.Trial, res.Retrieval, evidence)
	for _, l := range res.LeftOut {
		msg += "; not applied: " + l
	}
	return reconcile.Proceed.Set(ragopsv1alpha1.ConditionPromoted, metav1.ConditionTrue, ragopsv1alpha1.ReasonPromoted, msg), nil
}

// ensurePromotedStrategy creates want (the winner's strategy) or checks that the strategy of
// its name has the same spec; msg names a conflict.
func (r *ExperimentReconciler) ensurePromotedStrategy(ctx context.Context, exp *ragopsv1alpha1.Experiment, want *ragopsv1alpha1.ChunkingStrategy) (msg string, err error) {
	var have ragopsv1alpha1.ChunkingStrategy
	err = r.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case err == nil:
		if !equality.Semantic.DeepEqual(have.Spec, want.Spec) {
			return fmt.Sprintf("ChunkingStrategy %q exists with another spec; the winner's is not applied to Index %s (delete or rename it, or commit `ragops experiment winner %s`)",
				want.Name, exp.Spec.Promote.IndexRef.Name, exp.Name), nil
		}
		return "", nil
	case !apierrors.IsNotFound(err):
		return "", err
	}
	cs := want.DeepCopy()
	cs.Labels = map[string]string{LabelPromotedBy: exp.Name}
	if err := r.Create(ctx, cs); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	return "", nil
}
