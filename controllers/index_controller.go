package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/vectorstore"
)

// Index condition reasons.
const (
	ReasonCorpusNotFound   = "CorpusNotFound"
	ReasonCorpusNotReady   = "CorpusNotReady"
	ReasonStrategyNotFound = "StrategyNotFound"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonBuilding         = "Building"
	ReasonBuildFailed      = "BuildFailed"
	// ReasonShardsFailed: some shards of a build ran out of their retries while the others
	// completed (their figures are in the revision's status).
	ReasonShardsFailed  = "ShardsFailed"
	ReasonSyncingCorpus = "SyncingCorpus"
	ReasonGating        = "Gating"
	ReasonGateFailed    = "GateFailed"
	// ReasonGateEvaluationFailed: a gating Evaluation failed, so the gate cannot decide.
	ReasonGateEvaluationFailed = "GateEvaluationFailed"
	ReasonActive               = "Active"
	ReasonWeaviateError        = "WeaviateUnavailable"
	ReasonCollectionLost       = "CollectionLost"
	ReasonCleanupFailed        = "CleanupFailed"
	ReasonIndexSuspended       = "Suspended"
	ReasonJobConflict          = "JobConflict"
	ReasonDeleting             = "Deleting"
	// ReasonJobsNotStopping: an Index's deletion force-deleted the pods of its running Jobs
	// that had not stopped within JobStopTimeout (stuck Terminating, often on a lost node).
	ReasonJobsNotStopping    = "JobsNotStopping"
	annotationLastCorpusSync = "ragops.dev/corpus-revision"
)

// IndexReconciler builds Index revisions with embedder Jobs, rolls them out by moving the
// Weaviate alias (immediately or after a gating Evaluation), syncs corpus changes into the
// active revision, keeps a bounded revision history and cleans Weaviate up on deletion.
type IndexReconciler struct {
	client.Client
	Events  events.EventRecorder
	Options Options
	written ownWrites
	// syncs bounds the corpus syncs that run at once (Options.MaxConcurrentSyncs).
	syncs syncQueue
	// modules holds the readings of each Weaviate's modules (model servers).
	modules moduleCache
	// drift holds when each Index's collection and alias were last confirmed in Weaviate.
	drift driftChecks
	// hashes holds the model hash each model server reported.
	hashes modelHashCache
	// accessApplied holds, per Index UID, the hash of the endpoint objects this process
	// applied for it, so a steady-state reconcile sends none of them while a changed object
	// (a new worker image, another Weaviate) is applied again.
	accessApplied sync.Map
	// readersApplied holds, per Index UID, what this process provisioned in Weaviate for it
	// (a readerApplied), so a steady-state reconcile makes no Weaviate call.
	readersApplied sync.Map
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
	// events holds the Events of the steps until the status they report is stored.
	events *reconcile.EventBuffer
}

// Reconcile drives one Index: the steps (resolve inputs, serving, replica health, sync of
// the active revision, build, rollout, prune; or delete) each return a reconcile.Result that
// names the condition its outcome calls for, and reconcile.Summarize sets Ready, Reconciling
// and Stalled from them once, before the status is patched once. A step's error ends the
// reconcile (the work queue backs off) after its result is summarized like any other.
func (r *IndexReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	ctx, endSpan := tracing.Reconcile(ctx, "Index", req.Namespace, req.Name)
	defer func() { endSpan(retErr) }()
	var idx ragopsv1alpha1.Index
	if err := r.Get(ctx, req.NamespacedName, &idx); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.drift.forget(req.NamespacedName)
			metrics.ForgetConditions(req.Namespace, "Index", req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&idx) {
		return ctrl.Result{RequeueAfter: cacheCatchUp}, nil
	}
	defer r.written.record(&idx, idx.ResourceVersion)
	patcher := reconcile.NewStatusPatcher(&idx, needsAPerson)
	held := &reconcile.EventBuffer{}
	defer func() {
		// A step's Event reports its decision; the conditions it set add none (Besides).
		if patcher.Done(ctx, r.Client, held.Besides(r.Events), &idx, &res, &retErr) {
			held.Flush(r.Events)
		}
	}()
	if !idx.DeletionTimestamp.IsZero() {
		r.drift.forget(req.NamespacedName)
		result, err := r.reconcileDelete(ctx, &idx)
		return reconcile.Summarize(&idx, result), err
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
		return reconcile.Summarize(&idx, suspended("the Index is suspended (spec.suspend): nothing is built")), nil
	}
	st := &indexState{idx: &idx, events: held}
	defer func() {
		metrics.TrackIndex(idx.Namespace, idx.Name)
		if st.corpus != nil {
			metrics.SetServedCorpus(idx.Namespace, idx.Name, servedCorpusRevision(&idx), st.corpus.Status.Revision, time.Now())
		}
		b := idx.Status.Build
		if b == nil {
			metrics.SetBuildProgress(idx.Namespace, idx.Name, false, "", 0, 0)
			return
		}
		metrics.SetBuildProgress(idx.Namespace, idx.Name, true, b.Revision, b.DocumentsDone, b.DocumentsTotal)
	}()
	result, err := reconcile.Run(ctx, st,
		r.resolveInputs,
		r.reconcileAccessEndpoint,
		r.reconcileWeaviateReader,
		r.reconcileServing,
		r.reconcileReplicaHealth,
		r.reconcileCorpusSync,
		r.reconcileBuild,
		r.reconcileRollout,
		r.pruneRevisions,
	)
	if err != nil {
		reconcile.Summarize(&idx, result)
		return ctrl.Result{}, err // the work queue backs off
	}
	return reconcile.Summarize(&idx, result), nil
}

// suspended is the result of a suspended Index.
func suspended(msg string) reconcile.Result {
	return reconcile.Result{}.With(reconcile.OutcomeSuspended, ReasonIndexSuspended, msg)
}

// jitter spreads periodic checks of many Indexes: d plus up to 10% at random.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/10+1)
}

// resolveInputs fetches the Corpus, the strategy and the API key, computes the revision and
// opens the store. It stops with a condition that names what is missing.
func (r *IndexReconciler) resolveInputs(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	var corpus ragopsv1alpha1.Corpus
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.CorpusRef.Name}, &corpus); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Stalled(ReasonCorpusNotFound, fmt.Sprintf("spec.corpusRef.name: Corpus %q not found", idx.Spec.CorpusRef.Name)), nil
		}
		return reconcile.Stop, err
	}
	st.corpus = &corpus
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.StrategyRef.Name}, &cs); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Stalled(ReasonStrategyNotFound, fmt.Sprintf("spec.strategyRef.name: ChunkingStrategy %q not found", idx.Spec.StrategyRef.Name)), nil
		}
		return reconcile.Stop, err
	}
	if err := registry.Validate(cs.Spec); err != nil {
		return reconcile.Stalled(conditions.ReasonInvalidStrategy, fmt.Sprintf("ChunkingStrategy %q: %v", cs.Name, err)), nil
	}
	st.strategy = &cs
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		if msg, reason := checkSecretKeys(ctx, r.Client, idx.Namespace, "spec.weaviate.apiKeySecretRef", ref.Name, ref.Key); msg != "" {
			return reconcile.Stalled(reason, msg), nil
		}
		var sec corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: ref.Name}, &sec); err != nil {
			return reconcile.Stop, err
		}
		st.apiKey = string(sec.Data[ref.Key])
	}
	ca, msg, reason, err := weaviateCABundle(ctx, r.Client, idx.Namespace, idx.Spec.Weaviate)
	if err != nil {
		return reconcile.Stop, err
	}
	if msg != "" {
		return reconcile.Stalled(reason, msg), nil
	}
	if err := holdCleanupRefs(ctx, r.Client, idx); err != nil {
		return reconcile.Stop, err
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		return reconcile.Stalled(ReasonInvalidSpec, err.Error()), nil
	}
	st.alias = alias
	idx.Status.Alias = alias
	st.store, err = r.Options.NewStore(idx.Spec.Weaviate, st.apiKey, ca)
	if err != nil {
		return reconcile.Stalled(ReasonInvalidSpec, err.Error()), nil
	}
	st.revision = Revision(cs.Spec, idx, corpus.Spec.Format)
	idx.Status.Revision = st.revision
	return reconcile.Proceed, nil
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
// strategies, Secrets and CA bundle ConfigMaps they reference (a missing one created later
// resumes the Index).
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
		Owns(&ragopsv1alpha1.Evaluation{}, builder.WithPredicates(evaluationStatusChanged)).
		Watches(&ragopsv1alpha1.Corpus{}, by(indexByCorpus), builder.WithPredicates(statusChanged)).
		Watches(&ragopsv1alpha1.ChunkingStrategy{}, by(indexByStrategy), builder.WithPredicates(statusChanged)).
		Watches(&corev1.Secret{}, by(indexBySecret), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, by(indexByConfigMap), builder.OnlyMetadata).
		Named("index").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.IndexConcurrency}).
		Complete(r)
}

func equalStatus(a, b client.Object) bool {
	ca, okA := a.(reconcile.Object)
	cb, okB := b.(reconcile.Object)
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

// servedCorpusRevision returns the corpus revision the Index's active revision holds (what
// its alias serves); "" when none is active.
func servedCorpusRevision(idx *ragopsv1alpha1.Index) string {
	for _, rev := range idx.Status.Revisions {
		if rev.Name == idx.Status.ActiveRevision {
			return rev.CorpusRevision
		}
	}
	return ""
}
