package controllers

import (
	"context"
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
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
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
	ReasonSyncingCorpus    = "SyncingCorpus"
	ReasonGating           = "Gating"
	ReasonGateFailed       = "GateFailed"
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
	events *eventBuffer
}

// Reconcile drives one Index: the steps (resolve inputs, replica health, sync of the
// active revision, build, rollout, prune; or delete) each return a stepResult that names the condition its outcome calls for, and
// summarize sets Ready, Reconciling and Stalled from them once, before the status is patched
// once. A step's error ends the reconcile (the work queue backs off) after its result is
// summarized like any other.
func (r *IndexReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var idx ragopsv1alpha1.Index
	if err := r.Get(ctx, req.NamespacedName, &idx); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&idx) {
		return ctrl.Result{RequeueAfter: cacheCatchUp}, nil
	}
	defer r.written.record(&idx, idx.ResourceVersion)
	patcher := newStatusPatcher(&idx)
	held := &eventBuffer{}
	defer func() {
		if patcher.done(ctx, r.Client, r.Events, &idx, &res, &retErr) {
			held.flush(r.Events)
		}
	}()
	if !idx.DeletionTimestamp.IsZero() {
		result, err := r.reconcileDelete(ctx, &idx)
		return summarize(&idx, result), err
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
		return summarize(&idx, suspended("the Index is suspended (spec.suspend): nothing is built")), nil
	}
	st := &indexState{idx: &idx, events: held}
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
		r.reconcileServing,
		r.reconcileReplicaHealth,
		r.reconcileCorpusSync,
		r.reconcileBuild,
		r.reconcileRollout,
		r.pruneRevisions,
	} {
		res, err := step(ctx, st)
		result = result.merge(res)
		if err != nil {
			summarize(&idx, result)
			return ctrl.Result{}, err // the work queue backs off
		}
		if res.Stop {
			break
		}
	}
	return summarize(&idx, result), nil
}

// stepResult is what one step of an Index reconcile decided: whether the later steps run,
// when to look again, and the conditions its outcome calls for (applied by summarize).
type stepResult struct {
	// Stop ends this reconcile after the step: it waits for a Job, an Evaluation, another
	// object or a user's change.
	Stop bool
	// RequeueAfter asks for another reconcile after this long (0: on the next event only).
	RequeueAfter time.Duration
	// Outcome is the state the step found; outcomeNone leaves the conditions to other steps.
	Outcome outcome
	// Reason and Message explain Outcome in the conditions it sets.
	Reason, Message string
}

// outcome is the kstatus state a step found (see package internal/conditions).
type outcome int

const (
	// outcomeNone: the step has nothing to say about the conditions.
	outcomeNone outcome = iota
	// outcomeReady: the desired revision serves; Ready=True, no Reconciling, no Stalled.
	outcomeReady
	// outcomeProgressing: work in progress (a build, a gate, a Corpus to wait for);
	// Reconciling=True, and Ready stays True when it was (the active revision keeps
	// serving), else Ready=False.
	outcomeProgressing
	// outcomeProgressingKeepReady: work in progress on the serving revision (a corpus sync);
	// Reconciling=True, Ready left as it is.
	outcomeProgressingKeepReady
	// outcomeRetrying: a transient failure (Weaviate unreachable, a collection lost and
	// being rebuilt); Ready=False, Reconciling=True.
	outcomeRetrying
	// outcomeStalled: progress needs a user's change; Stalled=True, Ready=False.
	outcomeStalled
	// outcomeSuspended: spec.suspend; no Reconciling, and Stalled unless Ready is True.
	outcomeSuspended
	// outcomeDeletionBlocked: deletion waits (for Job pods, for Weaviate);
	// DeletionBlocked=True, the other conditions left as they are.
	outcomeDeletionBlocked
	// outcomeDeleted: cleanup is done and only others' finalizers may hold the object;
	// Ready=False, no Reconciling, Stalled or DeletionBlocked.
	outcomeDeleted
)

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

// with returns res with the outcome o, explained by reason and msg.
func (res stepResult) with(o outcome, reason, msg string) stepResult {
	res.Outcome, res.Reason, res.Message = o, reason, msg
	return res
}

// requeue returns res looking again after d.
func (res stepResult) requeue(d time.Duration) stepResult {
	res.RequeueAfter = d
	return res
}

// stalled ends the reconcile until a user's change: Stalled=True with reason and msg.
func stalled(reason, msg string) stepResult { return stop.with(outcomeStalled, reason, msg) }

// suspended is the result of a suspended Index.
func suspended(msg string) stepResult {
	return stepResult{}.with(outcomeSuspended, ReasonIndexSuspended, msg)
}

// merge keeps the soonest requeue of two steps, b's Stop, and b's outcome unless b has none:
// the last step that decided the conditions decides them.
func (a stepResult) merge(b stepResult) stepResult {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		a.RequeueAfter = b.RequeueAfter
	}
	a.Stop = b.Stop
	if b.Outcome != outcomeNone {
		a.Outcome, a.Reason, a.Message = b.Outcome, b.Reason, b.Message
	}
	return a
}

// summarize sets the Index's Ready, Reconciling, Stalled and DeletionBlocked conditions from
// the merged result of its steps, and returns the reconcile's result.
func summarize(idx *ragopsv1alpha1.Index, res stepResult) ctrl.Result {
	switch res.Outcome {
	case outcomeReady:
		conditions.MarkReady(idx, res.Reason, res.Message)
	case outcomeProgressing:
		conditions.MarkReconcilingKeepReadyOrFalse(idx, res.Reason, res.Message)
	case outcomeProgressingKeepReady:
		conditions.MarkReconcilingKeepReady(idx, res.Reason, res.Message)
	case outcomeRetrying:
		conditions.MarkNotReady(idx, res.Reason, res.Message)
	case outcomeStalled:
		conditions.MarkStalled(idx, res.Reason, res.Message)
	case outcomeSuspended:
		conditions.Remove(idx, ragopsv1alpha1.ConditionReconciling)
		if c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			conditions.MarkStalled(idx, res.Reason, res.Message)
		}
	case outcomeDeletionBlocked:
		conditions.Set(idx, ragopsv1alpha1.ConditionDeletionBlocked, metav1.ConditionTrue, res.Reason, res.Message)
	case outcomeDeleted:
		conditions.Set(idx, ragopsv1alpha1.ConditionReady, metav1.ConditionFalse, res.Reason, res.Message)
		conditions.Remove(idx, ragopsv1alpha1.ConditionReconciling)
		conditions.Remove(idx, ragopsv1alpha1.ConditionStalled)
		conditions.Remove(idx, ragopsv1alpha1.ConditionDeletionBlocked)
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}
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
			return stalled(ReasonCorpusNotFound, fmt.Sprintf("spec.corpusRef.name: Corpus %q not found", idx.Spec.CorpusRef.Name)), nil
		}
		return stop, err
	}
	st.corpus = &corpus
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.StrategyRef.Name}, &cs); err != nil {
		if apierrors.IsNotFound(err) {
			return stalled(ReasonStrategyNotFound, fmt.Sprintf("spec.strategyRef.name: ChunkingStrategy %q not found", idx.Spec.StrategyRef.Name)), nil
		}
		return stop, err
	}
	if err := registry.Validate(cs.Spec); err != nil {
		return stalled(conditions.ReasonInvalidStrategy, fmt.Sprintf("ChunkingStrategy %q: %v", cs.Name, err)), nil
	}
	st.strategy = &cs
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		if msg, reason := checkSecretKeys(ctx, r.Client, idx.Namespace, "spec.weaviate.apiKeySecretRef", ref.Name, ref.Key); msg != "" {
			return stalled(reason, msg), nil
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
		return stalled(reason, msg), nil
	}
	if err := holdCleanupRefs(ctx, r.Client, idx); err != nil {
		return stop, err
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		return stalled(ReasonInvalidSpec, err.Error()), nil
	}
	st.alias = alias
	idx.Status.Alias = alias
	st.store, err = r.Options.NewStore(idx.Spec.Weaviate, st.apiKey, ca)
	if err != nil {
		return stalled(ReasonInvalidSpec, err.Error()), nil
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
		Owns(&ragopsv1alpha1.Evaluation{}, builder.WithPredicates(statusChanged)).
		Watches(&ragopsv1alpha1.Corpus{}, by(indexByCorpus), builder.WithPredicates(statusChanged)).
		Watches(&ragopsv1alpha1.ChunkingStrategy{}, by(indexByStrategy), builder.WithPredicates(statusChanged)).
		Watches(&corev1.Secret{}, by(indexBySecret), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, by(indexByConfigMap), builder.OnlyMetadata).
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
