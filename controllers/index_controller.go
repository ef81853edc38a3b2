package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/vectorstore"
)

// Index condition reasons.
const (
	ReasonCorpusNotFound     = "CorpusNotFound"
	ReasonCorpusNotReady     = "CorpusNotReady"
	ReasonStrategyNotFound   = "StrategyNotFound"
	ReasonStrategyInvalid    = "StrategyInvalid"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonBuilding           = "Building"
	ReasonBuildFailed        = "BuildFailed"
	ReasonSyncingCorpus      = "SyncingCorpus"
	ReasonGating             = "Gating"
	ReasonGateFailed         = "GateFailed"
	ReasonActive             = "Active"
	ReasonWeaviateError      = "WeaviateUnavailable"
	ReasonCollectionLost     = "CollectionLost"
	ReasonCleanupFailed      = "CleanupFailed"
	ReasonIndexSuspended     = "Suspended"
	ReasonJobConflict        = "JobConflict"
	ReasonDeleting           = "Deleting"
	annotationLastCorpusSync = "ragops.dev/corpus-revision"
)

// IndexReconciler builds Index revisions with embedder Jobs, rolls them out by moving the
// Weaviate alias (immediately or after a gating Evaluation), syncs corpus changes into the
// active revision, keeps a bounded revision history and cleans Weaviate up on deletion.
type IndexReconciler struct {
	client.Client
	Events  events.EventRecorder
	Options Options
}

// +kubebuilder:rbac:groups=ragops.dev,resources=indexes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ragops.dev,resources=indexes/status,verbs=patch
// +kubebuilder:rbac:groups=ragops.dev,resources=indexes/finalizers,verbs=update
// +kubebuilder:rbac:groups=ragops.dev,resources=evaluations,verbs=get;list;watch;create;delete

// indexState carries what the sub-reconcilers resolve.
type indexState struct {
	idx      *ragopsv1alpha1.Index
	corpus   *ragopsv1alpha1.Corpus
	strategy *ragopsv1alpha1.ChunkingStrategy
	apiKey   string
	store    Store
	alias    string
	revision string
}

// Reconcile drives one Index.
func (r *IndexReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var idx ragopsv1alpha1.Index
	if err := r.Get(ctx, req.NamespacedName, &idx); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patcher := newStatusPatcher(&idx)
	defer func() {
		if err := patcher.patch(ctx, r.Client, r.Events, &idx); err != nil && !apierrors.IsNotFound(err) {
			retErr = errors.Join(retErr, err)
		}
	}()
	if !idx.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, &idx)
	}
	if !controllerutil.ContainsFinalizer(&idx, Finalizer) {
		base := idx.DeepCopy()
		controllerutil.AddFinalizer(&idx, Finalizer)
		if err := r.Patch(ctx, &idx, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, err
		}
	}
	defer func() { idx.Status.ObservedGeneration = idx.Generation }()
	if idx.Spec.Suspend {
		// Nothing is built, synced, rolled out or pruned; the active revision keeps serving.
		conditions.Remove(&idx, ragopsv1alpha1.ConditionReconciling)
		if c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			conditions.MarkStalled(&idx, ReasonIndexSuspended, "the Index is suspended (spec.suspend): nothing is built")
		}
		return ctrl.Result{}, nil
	}
	st := &indexState{idx: &idx}
	defer func() {
		b := idx.Status.Build
		if b == nil {
			metrics.SetBuildProgress(idx.Namespace, idx.Name, false, "", 0, 0)
			return
		}
		metrics.SetBuildProgress(idx.Namespace, idx.Name, true, b.Revision, b.DocumentsDone, b.DocumentsTotal)
	}()
	var result stepResult
	for _, step := range []func(context.Context, *indexState) (stepResult, error){
		r.resolveInputs,
		r.reconcileReplicaHealth,
		r.reconcileBuild,
		r.reconcileRollout,
		r.reconcileCorpusSync,
		r.pruneRevisions,
	} {
		res, err := step(ctx, st)
		if err != nil {
			return ctrl.Result{}, err // the work queue backs off
		}
		result = result.merge(res)
		if res.Stop {
			break
		}
	}
	return ctrl.Result{RequeueAfter: result.RequeueAfter}, nil
}

// stepResult is what one sub-reconciler of an Index decided: whether the later steps run
// and when to look again. Each step sets the conditions that explain a Stop.
type stepResult struct {
	// Stop ends this reconcile after the step: it waits for a Job, an Evaluation, another
	// object or a user's change.
	Stop bool
	// RequeueAfter asks for another reconcile after this long (0: on the next event only).
	RequeueAfter time.Duration
}

var (
	// proceed lets the next step run.
	proceed = stepResult{}
	// stop ends the reconcile until an event (or the error's backoff).
	stop = stepResult{Stop: true}
)

// stopFor ends the reconcile and looks again after d.
func stopFor(d time.Duration) stepResult { return stepResult{Stop: true, RequeueAfter: d} }

// proceedFor lets the next step run and looks again after d.
func proceedFor(d time.Duration) stepResult { return stepResult{RequeueAfter: d} }

// merge keeps the soonest requeue of two steps and b's Stop.
func (a stepResult) merge(b stepResult) stepResult {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		a.RequeueAfter = b.RequeueAfter
	}
	a.Stop = b.Stop
	return a
}

// jitter spreads periodic checks of many Indexes: d plus up to 10% at random.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/10+1)
}

// resolveInputs fetches the Corpus, the strategy and the API key, computes the revision and
// opens the store. It stops with a condition that names what is missing.
func (r *IndexReconciler) resolveInputs(ctx context.Context, st *indexState) (stepResult, error) {
	idx := st.idx
	var corpus ragopsv1alpha1.Corpus
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.CorpusRef.Name}, &corpus); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkStalled(idx, ReasonCorpusNotFound, fmt.Sprintf("spec.corpusRef.name: Corpus %q not found", idx.Spec.CorpusRef.Name))
			return stop, nil
		}
		return stop, err
	}
	st.corpus = &corpus
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.StrategyRef.Name}, &cs); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkStalled(idx, ReasonStrategyNotFound, fmt.Sprintf("spec.strategyRef.name: ChunkingStrategy %q not found", idx.Spec.StrategyRef.Name))
			return stop, nil
		}
		return stop, err
	}
	if err := ValidateStrategy(cs.Spec); err != nil {
		conditions.MarkStalled(idx, ReasonStrategyInvalid, fmt.Sprintf("ChunkingStrategy %q: %v", cs.Name, err))
		return stop, nil
	}
	st.strategy = &cs
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		if msg, reason := checkSecretKeys(ctx, r.Client, idx.Namespace, "spec.weaviate.apiKeySecretRef", ref.Name, ref.Key); msg != "" {
			conditions.MarkStalled(idx, reason, msg)
			return stop, nil
		}
		var sec corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: ref.Name}, &sec); err != nil {
			return stop, err
		}
		st.apiKey = string(sec.Data[ref.Key])
	}
	ca, msg, reason, err := weaviateCABundle(ctx, r.Client, idx.Namespace, idx.Spec.Weaviate)
	if err != nil {
		return stop, err
	}
	if msg != "" {
		conditions.MarkStalled(idx, reason, msg)
		return stop, nil
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		conditions.MarkStalled(idx, ReasonInvalidSpec, err.Error())
		return stop, nil
	}
	st.alias = alias
	idx.Status.Alias = alias
	st.store, err = r.Options.NewStore(idx.Spec.Weaviate, st.apiKey, ca)
	if err != nil {
		conditions.MarkStalled(idx, ReasonInvalidSpec, err.Error())
		return stop, nil
	}
	st.revision = Revision(cs.Spec, idx, corpus.Spec.Format)
	idx.Status.Revision = st.revision
	return proceed, nil
}

func findRevision(idx *ragopsv1alpha1.Index, name string) *ragopsv1alpha1.RevisionStatus {
	for i := range idx.Status.Revisions {
		if idx.Status.Revisions[i].Name == name {
			return &idx.Status.Revisions[i]
		}
	}
	return nil
}

// SetupWithManager watches Indexes, their Jobs and gating Evaluations, and the Corpora,
// strategies and Secrets they reference.
func (r *IndexReconciler) SetupWithManager(mgr ctrl.Manager) error {
	by := func(field string) handler.EventHandler {
		return enqueueReferrers(r.Client, func() client.ObjectList { return &ragopsv1alpha1.IndexList{} }, field)
	}
	statusChanged := predicate.Funcs{UpdateFunc: func(e evtUpdate) bool {
		return !equalStatus(e.ObjectOld, e.ObjectNew) || e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ragopsv1alpha1.Index{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&batchv1.Job{}).
		Owns(&ragopsv1alpha1.Evaluation{}, builder.WithPredicates(statusChanged)).
		Watches(&ragopsv1alpha1.Corpus{}, by(indexByCorpus), builder.WithPredicates(statusChanged)).
		Watches(&ragopsv1alpha1.ChunkingStrategy{}, by(indexByStrategy), builder.WithPredicates(statusChanged)).
		Watches(&corev1.Secret{}, by(indexBySecret), builder.OnlyMetadata).
		Named("index").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.IndexConcurrency}).
		Complete(r)
}

func equalStatus(a, b client.Object) bool {
	ca, okA := a.(statusObject)
	cb, okB := b.(statusObject)
	if !okA || !okB {
		return false
	}
	ra := meta.FindStatusCondition(*ca.GetConditions(), ragopsv1alpha1.ConditionReady)
	rb := meta.FindStatusCondition(*cb.GetConditions(), ragopsv1alpha1.ConditionReady)
	if (ra == nil) != (rb == nil) {
		return false
	}
	if ra != nil && (ra.Status != rb.Status || ra.ObservedGeneration != rb.ObservedGeneration || ra.Reason != rb.Reason) {
		return false
	}
	return statusRevision(a) == statusRevision(b)
}

// statusRevision returns the status field that dependents react to.
func statusRevision(o client.Object) string {
	switch v := o.(type) {
	case *ragopsv1alpha1.Corpus:
		return v.Status.Revision
	case *ragopsv1alpha1.Evaluation:
		return v.Status.Revision
	case *ragopsv1alpha1.Index:
		return v.Status.ActiveRevision
	}
	return ""
}
