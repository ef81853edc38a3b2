package controllers

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
)

// ChunkingStrategy condition reasons.
const (
	ReasonValid = "Valid"
)

// ChunkingStrategyReconciler validates what CEL cannot (regular expressions compile in Go's
// RE2, the chunker can be built from the spec) and lists the Indexes that use a strategy.
type ChunkingStrategyReconciler struct {
	client.Client
	Events events.EventRecorder
}

// +kubebuilder:rbac:groups=ragops.dev,resources=chunkingstrategies,verbs=get;list;watch
// +kubebuilder:rbac:groups=ragops.dev,resources=chunkingstrategies/status,verbs=patch

// Reconcile validates one ChunkingStrategy.
func (r *ChunkingStrategyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := r.Get(ctx, req.NamespacedName, &cs); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetConditions(req.Namespace, "ChunkingStrategy", req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	patcher := reconcile.NewStatusPatcher(&cs, needsAPerson)
	defer func() {
		patcher.Done(ctx, r.Client, r.Events, &cs, &res, &retErr)
	}()

	var users ragopsv1alpha1.IndexList
	if err := r.List(ctx, &users, client.InNamespace(cs.Namespace), client.MatchingFields{indexByStrategy: cs.Name}); err != nil {
		return ctrl.Result{}, err
	}
	names := make([]string, 0, len(users.Items))
	for _, ix := range users.Items {
		names = append(names, ix.Name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		names = nil
	}
	cs.Status.Indexes = names

	result := reconcile.Stop.With(reconcile.OutcomeReady, ReasonValid, fmt.Sprintf("%s strategy, size %d %s", cs.Spec.Type, cs.Spec.Size, cs.Spec.Unit))
	if err := registry.Validate(cs.Spec); err != nil {
		result = reconcile.Stalled(conditions.ReasonInvalidStrategy, err.Error())
	}
	cs.Status.ObservedGeneration = cs.Generation
	return reconcile.Summarize(&cs, result), nil
}

// SetupWithManager watches strategies and the Indexes that reference them.
func (r *ChunkingStrategyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&ragopsv1alpha1.ChunkingStrategy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&ragopsv1alpha1.Index{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.(*ragopsv1alpha1.Index).Spec.StrategyRef.Name}}}
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("chunkingstrategy").
		Complete(r)
}
