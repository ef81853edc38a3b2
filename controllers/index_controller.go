package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
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
	var result ctrl.Result
	for _, step := range []func(context.Context, *indexState) (ctrl.Result, bool, error){
		r.resolveInputs,
		r.reconcileBuild,
		r.reconcileRollout,
		r.reconcileCorpusSync,
		r.pruneRevisions,
	} {
		res, done, err := step(ctx, st)
		if err != nil || done {
			return res, err
		}
		result = soonest(result, res)
	}
	return result, nil
}

// jitter spreads periodic checks of many Indexes: d plus up to 10% at random.
func jitter(d time.Duration) time.Duration {
	return d + rand.N(d/10+1)
}

// soonest merges the requeue requests of two steps.
func soonest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

// resolveInputs fetches the Corpus, the strategy and the API key, computes the revision and
// opens the store. It stops with a condition that names what is missing.
func (r *IndexReconciler) resolveInputs(ctx context.Context, st *indexState) (ctrl.Result, bool, error) {
	idx := st.idx
	var corpus ragopsv1alpha1.Corpus
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.CorpusRef.Name}, &corpus); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkStalled(idx, ReasonCorpusNotFound, fmt.Sprintf("spec.corpusRef.name: Corpus %q not found", idx.Spec.CorpusRef.Name))
			return ctrl.Result{}, true, nil
		}
		return ctrl.Result{}, true, err
	}
	st.corpus = &corpus
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: idx.Spec.StrategyRef.Name}, &cs); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkStalled(idx, ReasonStrategyNotFound, fmt.Sprintf("spec.strategyRef.name: ChunkingStrategy %q not found", idx.Spec.StrategyRef.Name))
			return ctrl.Result{}, true, nil
		}
		return ctrl.Result{}, true, err
	}
	if err := ValidateStrategy(cs.Spec); err != nil {
		conditions.MarkStalled(idx, ReasonStrategyInvalid, fmt.Sprintf("ChunkingStrategy %q: %v", cs.Name, err))
		return ctrl.Result{}, true, nil
	}
	st.strategy = &cs
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		if msg, reason := checkSecretKeys(ctx, r.Client, idx.Namespace, "spec.weaviate.apiKeySecretRef", ref.Name, ref.Key); msg != "" {
			conditions.MarkStalled(idx, reason, msg)
			return ctrl.Result{}, true, nil
		}
		var sec corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: ref.Name}, &sec); err != nil {
			return ctrl.Result{}, true, err
		}
		st.apiKey = string(sec.Data[ref.Key])
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		conditions.MarkStalled(idx, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, true, nil
	}
	st.alias = alias
	idx.Status.Alias = alias
	st.store, err = r.Options.NewStore(idx.Spec.Weaviate, st.apiKey)
	if err != nil {
		conditions.MarkStalled(idx, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, true, nil
	}
	st.revision = Revision(cs.Spec, idx, corpus.Spec.Format)
	idx.Status.Revision = st.revision
	return ctrl.Result{}, false, nil
}

func findRevision(idx *ragopsv1alpha1.Index, name string) *ragopsv1alpha1.RevisionStatus {
	for i := range idx.Status.Revisions {
		if idx.Status.Revisions[i].Name == name {
			return &idx.Status.Revisions[i]
		}
	}
	return nil
}

func buildJobName(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) string {
	name := fmt.Sprintf("%s-%s-build", objectName(idx.Name, 40), rev.Name)
	if rev.Attempt > 1 {
		name += fmt.Sprintf("-%d", rev.Attempt)
	}
	return name
}

// syncJobName names the sync Job of a corpus revision into a revision; after a retry
// (ragops.dev/retry) the name carries the handled retry, so a failed sync runs anew.
func syncJobName(idx *ragopsv1alpha1.Index, rev, corpusRev string) string {
	name := fmt.Sprintf("%s-%s-sync-%s", objectName(idx.Name, 32), rev, truncate(corpusRev, 8))
	if r := idx.Status.LastHandledRetry; r != "" {
		sum := sha256.Sum256([]byte(r))
		name += "-" + hex.EncodeToString(sum[:])[:6]
	}
	return name
}

// reconcileBuild starts or follows the build of the desired revision.
func (r *IndexReconciler) reconcileBuild(ctx context.Context, st *indexState) (ctrl.Result, bool, error) {
	idx := st.idx
	if err := r.stopSupersededBuilds(ctx, st); err != nil {
		return ctrl.Result{}, true, err
	}
	rev := findRevision(idx, st.revision)
	if rev != nil && rev.Phase == ragopsv1alpha1.RevisionSuperseded {
		if err := r.restartBuild(ctx, st, rev, "the spec came back to this revision after its build was stopped"); err != nil {
			return ctrl.Result{}, true, err
		}
	}
	if rev != nil && rev.Phase == ragopsv1alpha1.RevisionFailed {
		retry := idx.Annotations[AnnotationRetry]
		if retry == "" || retry == idx.Status.LastHandledRetry {
			conditions.MarkStalled(idx, ReasonBuildFailed, fmt.Sprintf("revision %s failed: %s%s", rev.Name, rev.Message, retryHint(idx)))
			return ctrl.Result{}, true, nil
		}
		idx.Status.LastHandledRetry = retry
		if err := r.restartBuild(ctx, st, rev, fmt.Sprintf("retry requested (%s=%s)", AnnotationRetry, retry)); err != nil {
			return ctrl.Result{}, true, err
		}
	}
	if rev != nil && rev.Phase != ragopsv1alpha1.RevisionBuilding {
		return ctrl.Result{}, false, nil
	}
	if !conditions.IsReady(st.corpus) || st.corpus.Status.Revision == "" {
		conditions.MarkReconcilingKeepReadyOrFalse(idx, ReasonCorpusNotReady, fmt.Sprintf("waiting for Corpus %q to sync", st.corpus.Name))
		return ctrl.Result{}, true, nil
	}
	collection, err := vectorstore.CollectionName(idx.Namespace, idx.Name, st.revision)
	if err != nil {
		conditions.MarkStalled(idx, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, true, nil
	}
	if rev == nil {
		idx.Status.Revisions = append([]ragopsv1alpha1.RevisionStatus{{
			Name: st.revision, Collection: collection, Phase: ragopsv1alpha1.RevisionBuilding,
			CorpusRevision: st.corpus.Status.Revision, CreationTime: ptr.To(metav1.Now()),
		}}, idx.Status.Revisions...)
		rev = &idx.Status.Revisions[0]
	}
	w := r.embedWorkload(st, rev, false)
	job, err := w.ensure(ctx, r.Client)
	if err != nil {
		return r.ensureFailed(idx, err)
	}
	state, failure := stateOf(job)
	switch state {
	case jobRunning:
		r.refreshProgress(ctx, st, rev, job)
		conditions.MarkReconcilingKeepReadyOrFalse(idx, ReasonBuilding, fmt.Sprintf("building revision %s: %s documents", rev.Name, idx.Status.Progress))
		return ctrl.Result{RequeueAfter: r.Options.ProgressInterval}, true, nil
	case jobFailed:
		msg, err := jobFailure(ctx, r.Client, job, failure)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		rev.Phase, rev.Message = ragopsv1alpha1.RevisionFailed, truncate(msg, 1024)
		rev.CompletionTime = ptr.To(metav1.Now())
		idx.Status.Build, idx.Status.Progress = nil, ""
		metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
		conditions.MarkStalled(idx, ReasonBuildFailed, fmt.Sprintf("revision %s: Job %s failed: %s%s", rev.Name, job.Name, rev.Message, retryHint(idx)))
		return ctrl.Result{}, true, nil
	}
	results, lost, err := r.shardResults(ctx, job)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	applyBuildResults(rev, results, job)
	if len(lost) > 0 {
		// The pods went before their results were read: count what Weaviate holds.
		n, err := st.store.Count(ctx, rev.Collection)
		if err != nil {
			return r.collectionError(ctx, st, rev, "count chunks of "+rev.Collection, err)
		}
		d, err := st.store.CountDocuments(ctx, rev.Collection)
		if err != nil {
			return r.collectionError(ctx, st, rev, "count documents of "+rev.Collection, err)
		}
		rev.Chunks, rev.Documents = int64(n), int64(d)
		rev.Message = fmt.Sprintf("the results of shard(s) %s were lost (pods deleted before they were read): documents and chunks counted in Weaviate, tokens and skipped documents unknown", strings.Join(lost, ","))
	}
	var seconds float64
	for _, br := range results {
		seconds = max(seconds, br.Seconds)
	}
	metrics.ObserveBuild(idx.Namespace, idx.Name, rev.Name, rev.Documents, rev.Chunks, rev.Tokens, seconds)
	rev.Phase = ragopsv1alpha1.RevisionReady
	idx.Status.Build, idx.Status.Progress = nil, ""
	r.Events.Eventf(idx, nil, corev1.EventTypeNormal, "RevisionBuilt", "Build", "revision %s: %d documents, %d chunks, %d tokens/s", rev.Name, rev.Documents, rev.Chunks, rev.TokensPerSecond)
	return ctrl.Result{}, false, nil
}

// retryHint tells how to rebuild a Failed revision once its cause is fixed.
func retryHint(idx *ragopsv1alpha1.Index) string {
	return fmt.Sprintf(" (to retry: kubectl annotate index %s %s=\"$(date +%%s)\" --overwrite)", idx.Name, AnnotationRetry)
}

// shardResults returns the parsed results of a finished embedder Job's shards: those saved in
// its plan ConfigMap while it ran, and those its pods still hold (saved too). lost names the
// shards whose pods went before their results were read, once ResultGrace has passed since
// the Job completed; until then missing results are an error (the pod cache can lag behind
// the Job's) and the reconcile retries with backoff.
func (r *IndexReconciler) shardResults(ctx context.Context, job *batchv1.Job) (results []plan.BuildResult, lost []string, err error) {
	msgs, err := saveResults(ctx, r.Client, job)
	if err != nil {
		return nil, nil, err
	}
	want := int(ptr.Deref(job.Spec.Completions, 1))
	for i := range want {
		msg, ok := msgs[strconv.Itoa(i)]
		if !ok {
			lost = append(lost, strconv.Itoa(i))
			continue
		}
		var br plan.BuildResult
		if err := json.Unmarshal([]byte(msg), &br); err != nil {
			return nil, nil, fmt.Errorf("Job %s shard %d: unreadable result %q: %w", job.Name, i, truncate(msg, 200), err)
		}
		results = append(results, br)
	}
	if len(lost) > 0 {
		done := job.Status.CompletionTime
		if done == nil || time.Since(done.Time) < r.Options.ResultGrace {
			return nil, nil, fmt.Errorf("job %s succeeded but the results of shard(s) %s are not visible yet", job.Name, strings.Join(lost, ","))
		}
	}
	return results, lost, nil
}

// applyBuildResults adds shard results to a revision's figures.
func applyBuildResults(rev *ragopsv1alpha1.RevisionStatus, results []plan.BuildResult, job *batchv1.Job) {
	var docs, chunks, tokens int64
	var seconds float64
	skipped := map[string]int64{}
	for _, br := range results {
		docs += br.Documents
		chunks += br.Chunks
		tokens += br.Tokens
		seconds = max(seconds, br.Seconds)
		for k, v := range br.Skipped {
			skipped[k] += v
		}
	}
	rev.Documents, rev.Chunks, rev.Tokens = docs, chunks, tokens
	if seconds > 0 {
		rev.TokensPerSecond = int64(float64(tokens) / seconds)
	}
	if len(skipped) > 0 {
		rev.Skipped = skipped
	}
	if job.Status.CompletionTime != nil {
		rev.CompletionTime = job.Status.CompletionTime.DeepCopy()
	} else {
		rev.CompletionTime = ptr.To(metav1.Now())
	}
}

// refreshProgress reads the running build's progress from Weaviate (documents with chunks
// and chunk count in the revision collection) and the Job (succeeded shards).
func (r *IndexReconciler) refreshProgress(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, job *batchv1.Job) {
	idx := st.idx
	p := idx.Status.Build
	if p == nil || p.Revision != rev.Name {
		p = &ragopsv1alpha1.BuildProgress{Revision: rev.Name}
	}
	p.DocumentsTotal = st.corpus.Status.Documents
	p.ShardsSucceeded = job.Status.Succeeded
	if _, err := saveResults(ctx, r.Client, job); err != nil {
		log.FromContext(ctx).Info("shard results not saved yet", "job", job.Name, "error", err.Error())
	}
	if n, err := st.store.Count(ctx, rev.Collection); err == nil {
		p.Chunks = int64(n)
	}
	if n, err := st.store.CountDocuments(ctx, rev.Collection); err == nil {
		p.DocumentsDone = int64(n)
	}
	p.UpdateTime = ptr.To(metav1.Now())
	idx.Status.Build = p
	idx.Status.Progress = progressString(p.DocumentsDone, p.DocumentsTotal)
}

func progressString(done, total int64) string {
	if total <= 0 {
		return fmt.Sprintf("%d/?", done)
	}
	return fmt.Sprintf("%d/%d (%d%%)", done, total, done*100/total)
}

// embedWorkload describes the embedder Job of a revision (full build, or incremental sync).
func (r *IndexReconciler) embedWorkload(st *indexState, rev *ragopsv1alpha1.RevisionStatus, incremental bool) *workload {
	idx := st.idx
	name, kind := buildJobName(idx, rev), jobKindBuild
	if incremental {
		name, kind = syncJobName(idx, rev.Name, st.corpus.Status.Revision), jobKindSync
	}
	e := idx.Spec.Embedder
	w := &workload{owner: idx, name: name, component: "embed", kind: kind, revision: rev.Name, args: []string{"embed"},
		template: e.Template, image: r.Options.WorkerImage, shards: max(e.Shards, 1), gpu: e.Device == ragopsv1alpha1.DeviceCUDA}
	var src plan.Source
	corpusSource(w, st.corpus, &src)
	if g := st.corpus.Spec.Git; g != nil && st.corpus.Status.Commit != "" {
		// Embed the commit the Corpus counted, not wherever the branch is now.
		pinned := *g
		pinned.Ref = st.corpus.Status.Commit
		src.Git = &pinned
	}
	modelDir := modelMounts(w, "model", plan.ModelDir, idx.Spec.Model, w.image)
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		w.env = append(w.env, secretEnv(plan.EnvWeaviateAPIKey, *ref))
	}
	w.plan = plan.Build{
		Version: plan.Version, Namespace: idx.Namespace, Index: idx.Name, Revision: rev.Name, Collection: rev.Collection,
		Incremental: incremental, Shards: int(w.shards), Source: src, Strategy: st.strategy.Spec,
		ModelDir: modelDir, Embedder: e, VectorIndex: idx.Spec.VectorIndex,
		Weaviate: plan.Weaviate{URL: idx.Spec.Weaviate.URL, GRPCAddress: idx.Spec.Weaviate.GRPCAddress},
	}
	return w
}

// reconcileRollout moves the alias to the desired revision once it is built and, under
// EvaluationGated, once its gating Evaluation passed.
func (r *IndexReconciler) reconcileRollout(ctx context.Context, st *indexState) (ctrl.Result, bool, error) {
	idx := st.idx
	rev := findRevision(idx, st.revision)
	if rev == nil {
		return ctrl.Result{}, true, nil
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
			conditions.MarkNotReady(idx, ReasonWeaviateError, fmt.Sprintf("read alias %s: %v", st.alias, err))
			return ctrl.Result{RequeueAfter: r.Options.ProgressInterval}, true, nil
		}
		if !found || target != rev.Collection {
			if err := st.store.SetAlias(ctx, st.alias, rev.Collection); err != nil {
				return r.collectionError(ctx, st, rev, fmt.Sprintf("point alias %s at %s", st.alias, rev.Collection), err)
			}
		}
		idx.Status.Chunks = rev.Chunks
		metrics.SetActiveRevision(idx.Namespace, idx.Name, rev.Name)
		return ctrl.Result{RequeueAfter: jitter(r.Options.DriftInterval)}, false, nil
	}
	if rev.Phase == ragopsv1alpha1.RevisionRejected {
		conditions.MarkStalled(idx, ReasonGateFailed, rev.Message)
		return ctrl.Result{}, true, nil
	}
	gated := idx.Spec.Rollout.Policy == ragopsv1alpha1.RolloutEvaluationGated && idx.Spec.Rollout.Gate != nil
	// A kept revision that served before (a revert) takes the alias back without a gate.
	if gated && rev.GateRecall == nil && active != nil {
		passed, msg, wait, err := r.reconcileGate(ctx, st, rev, active)
		if err != nil || wait {
			return ctrl.Result{}, true, err
		}
		if !passed {
			rev.Phase, rev.Message = ragopsv1alpha1.RevisionRejected, msg
			conditions.MarkStalled(idx, ReasonGateFailed, msg)
			r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonGateFailed, "Rollout", "%s", msg)
			return ctrl.Result{}, true, nil
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
	return ctrl.Result{RequeueAfter: jitter(r.Options.DriftInterval)}, false, nil
}

// collectionError handles a failed Weaviate call about a built revision's collection. When
// the collection is gone (Weaviate's data lost, deleted by hand) no alias can point at it
// again, so the revision is rebuilt under a new Job (Attempt + 1) and the Index is not Ready
// meanwhile; any other failure retries after ProgressInterval.
func (r *IndexReconciler) collectionError(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, op string, err error) (ctrl.Result, bool, error) {
	idx := st.idx
	var nf *vectorstore.CollectionNotFoundError
	if !errors.As(err, &nf) || nf.Collection != rev.Collection {
		conditions.MarkNotReady(idx, ReasonWeaviateError, fmt.Sprintf("%s: %v", op, err))
		return ctrl.Result{RequeueAfter: r.Options.ProgressInterval}, true, nil
	}
	if err := r.restartBuild(ctx, st, rev, fmt.Sprintf("collection %s is missing from Weaviate", rev.Collection)); err != nil {
		return ctrl.Result{}, true, err
	}
	conditions.MarkNotReady(idx, ReasonCollectionLost, fmt.Sprintf("revision %s: %s", rev.Name, rev.Message))
	r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonCollectionLost, "Rebuild", "revision %s: %s", rev.Name, rev.Message)
	return ctrl.Result{RequeueAfter: time.Second}, true, nil
}

// restartBuild turns rev back into a Building revision with the next Attempt, whose Job
// (<index>-<revision>-build-<attempt>) the build step then creates; the previous attempt's
// Job is deleted. why goes into the revision's message and the log.
func (r *IndexReconciler) restartBuild(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, why string) error {
	idx := st.idx
	if err := deleteJob(ctx, r.Client, idx.Namespace, buildJobName(idx, rev)); err != nil {
		return err
	}
	rev.Attempt = max(rev.Attempt, 1) + 1
	rev.Phase = ragopsv1alpha1.RevisionBuilding
	rev.Message = fmt.Sprintf("%s: rebuilding (attempt %d)", why, rev.Attempt)
	rev.CorpusRevision = st.corpus.Status.Revision
	rev.Documents, rev.Chunks, rev.Tokens, rev.TokensPerSecond, rev.Skipped = 0, 0, 0, 0, nil
	rev.CreationTime, rev.CompletionTime = ptr.To(metav1.Now()), nil
	if idx.Status.ActiveRevision == rev.Name {
		// Nothing serves now; the rebuilt revision takes the alias without a gate.
		idx.Status.ActiveRevision, idx.Status.Chunks = "", 0
	}
	log.FromContext(ctx).Info("rebuilding revision", "revision", rev.Name, "attempt", rev.Attempt, "why", why)
	return nil
}

// gateEvaluationName names the gating Evaluation of a revision.
func gateEvaluationName(idx *ragopsv1alpha1.Index, rev string) string {
	return fmt.Sprintf("%s-gate-%s", objectName(idx.Name, 40), rev)
}

// reconcileGate runs the gating Evaluations of the candidate (and of the active revision
// when maxRegression needs its baseline) and decides.
func (r *IndexReconciler) reconcileGate(ctx context.Context, st *indexState, cand, active *ragopsv1alpha1.RevisionStatus) (passed bool, msg string, wait bool, err error) {
	idx := st.idx
	gate := idx.Spec.Rollout.Gate
	cand.Phase = ragopsv1alpha1.RevisionGating
	candRecall, ready, err := r.gateRecall(ctx, idx, cand.Name)
	if err != nil || !ready {
		conditions.MarkReconcilingKeepReadyOrFalse(idx, ReasonGating, fmt.Sprintf("revision %s waits for its gating Evaluation %s", cand.Name, gateEvaluationName(idx, cand.Name)))
		return false, "", true, err
	}
	cand.GateRecall = ptr.To(candRecall)
	if gate.MinRecall != nil && candRecall < *gate.MinRecall {
		return false, fmt.Sprintf("revision %s recall@10 %.4f is below minRecall %.4f; alias stays on %s", cand.Name, candRecall, *gate.MinRecall, active.Name), false, nil
	}
	if gate.MaxRegression != nil {
		base := active.GateRecall
		if base == nil {
			recall, ready, err := r.gateRecall(ctx, idx, active.Name)
			if err != nil || !ready {
				conditions.MarkReconcilingKeepReadyOrFalse(idx, ReasonGating, fmt.Sprintf("measuring the active revision %s as the gate's baseline", active.Name))
				return false, "", true, err
			}
			base = ptr.To(recall)
			active.GateRecall = base
		}
		if candRecall < *base-*gate.MaxRegression-1e-9 {
			return false, fmt.Sprintf("revision %s recall@10 %.4f regresses more than %.4f from the active revision %s (%.4f); alias stays", cand.Name, candRecall, *gate.MaxRegression, active.Name, *base), false, nil
		}
	}
	return true, "", false, nil
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

// reconcileCorpusSync re-embeds changed documents and deletes removed ones in the active
// revision when the Corpus content revision moved on.
func (r *IndexReconciler) reconcileCorpusSync(ctx context.Context, st *indexState) (ctrl.Result, bool, error) {
	idx := st.idx
	rev := findRevision(idx, st.revision)
	if rev == nil || rev.Phase != ragopsv1alpha1.RevisionActive {
		return ctrl.Result{}, false, nil
	}
	if rev.CorpusRevision == st.corpus.Status.Revision || st.corpus.Status.Revision == "" {
		if err := r.deleteFinishedSyncJobs(ctx, st, rev); err != nil {
			return ctrl.Result{}, true, err
		}
		conditions.MarkReady(idx, ReasonActive, servingMessage(rev, st.alias))
		return ctrl.Result{}, false, nil
	}
	w := r.embedWorkload(st, rev, true)
	job, err := w.ensure(ctx, r.Client)
	if err != nil {
		return r.ensureFailed(idx, err)
	}
	state, failure := stateOf(job)
	switch state {
	case jobRunning:
		r.refreshProgress(ctx, st, rev, job)
		conditions.MarkReconcilingKeepReady(idx, ReasonSyncingCorpus, fmt.Sprintf("syncing corpus revision %s into revision %s", st.corpus.Status.Revision, rev.Name))
		return ctrl.Result{RequeueAfter: r.Options.ProgressInterval}, true, nil
	case jobFailed:
		msg, err := jobFailure(ctx, r.Client, job, failure)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		if retry := idx.Annotations[AnnotationRetry]; retry != "" && retry != idx.Status.LastHandledRetry {
			// The next reconcile starts a sync Job under a new name (it carries the retry).
			idx.Status.LastHandledRetry = retry
			if err := deleteJob(ctx, r.Client, idx.Namespace, job.Name); err != nil {
				return ctrl.Result{}, true, err
			}
			conditions.MarkReconcilingKeepReady(idx, ReasonSyncingCorpus, fmt.Sprintf("retry requested (%s=%s): syncing corpus revision %s into revision %s again", AnnotationRetry, retry, st.corpus.Status.Revision, rev.Name))
			return ctrl.Result{RequeueAfter: time.Second}, true, nil
		}
		metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
		conditions.MarkStalled(idx, ReasonBuildFailed, fmt.Sprintf("corpus sync Job %s failed: %s; revision %s keeps serving corpus revision %s%s", job.Name, truncate(msg, 1024), rev.Name, rev.CorpusRevision, retryHint(idx)))
		return ctrl.Result{}, true, nil
	}
	results, _, err := r.shardResults(ctx, job)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	var changed, deleted, kept, chunks, tokens int64
	for _, br := range results {
		changed += br.Documents
		deleted += br.Deleted
		kept += br.Kept
		chunks += br.Chunks
		tokens += br.Tokens
	}
	metrics.ObserveEmbedded(idx.Namespace, idx.Name, changed, chunks, tokens)
	if n, err := st.store.Count(ctx, rev.Collection); err == nil {
		rev.Chunks = int64(n)
	}
	if n, err := st.store.CountDocuments(ctx, rev.Collection); err == nil {
		rev.Documents = int64(n)
	}
	rev.CorpusRevision = st.corpus.Status.Revision
	rev.Skipped, rev.Message = nil, ""
	for _, br := range results {
		for k, v := range br.Skipped {
			if rev.Skipped == nil {
				rev.Skipped = map[string]int64{}
			}
			rev.Skipped[k] += v
		}
	}
	if kept > 0 {
		rev.Message = fmt.Sprintf("%d document(s) of corpus revision %s failed to read and kept their previous chunks (skipped by reason in status.revisions[].skipped)", kept, rev.CorpusRevision)
	}
	idx.Status.Chunks = rev.Chunks
	idx.Status.Build, idx.Status.Progress = nil, ""
	r.Events.Eventf(idx, nil, corev1.EventTypeNormal, "CorpusSynced", "Sync", "revision %s: %d documents re-embedded, %d deleted, %d unreadable kept their chunks", rev.Name, changed, deleted, kept)
	conditions.MarkReady(idx, ReasonActive, servingMessage(rev, st.alias))
	// The sync Job goes in a later reconcile, once this status (its result) is persisted: a
	// failed status patch then reads the result again instead of re-embedding the diff.
	return ctrl.Result{RequeueAfter: time.Second}, false, nil
}

// servingMessage is the Ready message of an Index whose revision serves, with the revision's
// note (documents kept after failing to read, results counted in Weaviate) when it has one.
func servingMessage(rev *ragopsv1alpha1.RevisionStatus, alias string) string {
	msg := fmt.Sprintf("revision %s serves %d chunks through alias %s", rev.Name, rev.Chunks, alias)
	if rev.Message != "" {
		msg += "; " + rev.Message
	}
	return msg
}

// deleteFinishedSyncJobs deletes the finished sync Jobs of the active revision once its
// status records the corpus revision it serves (the last sync's result, or a failed sync
// that a newer corpus revision replaced).
func (r *IndexReconciler) deleteFinishedSyncJobs(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus) error {
	jobs, err := r.revisionJobs(ctx, st.idx, rev.Name)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Labels[labelJobKind] != jobKindSync || !j.DeletionTimestamp.IsZero() {
			continue
		}
		if s, _ := stateOf(&j); s != jobRunning {
			if err := deleteJob(ctx, r.Client, j.Namespace, j.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// revisionJobs lists the Jobs this Index controls for one revision (builds and syncs).
func (r *IndexReconciler) revisionJobs(ctx context.Context, idx *ragopsv1alpha1.Index, rev string) ([]batchv1.Job, error) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(idx.Namespace), client.MatchingFields{jobOwnerKey: "Index/" + idx.Name}); err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range jobs.Items {
		if j.Labels[LabelRevision] == rev && metav1.IsControlledBy(&j, idx) {
			out = append(out, j)
		}
	}
	return out, nil
}

// stopSupersededBuilds stops the build Jobs of revisions the spec moved away from (their
// pods may hold GPUs) and marks those revisions Superseded; their collections are pruned
// like any other once the Jobs' pods are gone.
func (r *IndexReconciler) stopSupersededBuilds(ctx context.Context, st *indexState) error {
	idx := st.idx
	for i := range idx.Status.Revisions {
		rev := &idx.Status.Revisions[i]
		if rev.Name == st.revision || rev.Phase != ragopsv1alpha1.RevisionBuilding {
			continue
		}
		if err := deleteJob(ctx, r.Client, idx.Namespace, buildJobName(idx, rev)); err != nil {
			return err
		}
		rev.Phase = ragopsv1alpha1.RevisionSuperseded
		rev.Message = fmt.Sprintf("superseded by revision %s before its build finished: its Job was stopped", st.revision)
		rev.CompletionTime = ptr.To(metav1.Now())
		idx.Status.Build, idx.Status.Progress = nil, ""
		r.Events.Eventf(idx, nil, corev1.EventTypeNormal, "BuildSuperseded", "Build", "revision %s: %s", rev.Name, rev.Message)
	}
	return nil
}

// ensureFailed turns a failed Job creation into the step's result: a Job of that name that
// another object controls stalls the Index with a condition naming it.
func (r *IndexReconciler) ensureFailed(idx *ragopsv1alpha1.Index, err error) (ctrl.Result, bool, error) {
	var conflict *JobConflictError
	if errors.As(err, &conflict) {
		conditions.MarkStalled(idx, ReasonJobConflict, conflict.Error())
		return ctrl.Result{}, true, nil
	}
	return ctrl.Result{}, true, err
}

// pruneRevisions keeps RevisionHistoryLimit revisions (the active and the desired one always
// among them) and deletes the collections, Jobs and gating Evaluations of the rest.
func (r *IndexReconciler) pruneRevisions(ctx context.Context, st *indexState) (ctrl.Result, bool, error) {
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
	for _, rev := range revs {
		if len(kept) >= limit {
			break
		}
		kept[rev.Name] = true
	}
	var keep []ragopsv1alpha1.RevisionStatus
	for _, rev := range revs {
		if kept[rev.Name] {
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
		_ = deleteJob(ctx, r.Client, idx.Namespace, buildJobName(idx, &rev))
		_ = client.IgnoreNotFound(r.Delete(ctx, &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: gateEvaluationName(idx, rev.Name)}}))
		metrics.ForgetRevision(idx.Namespace, idx.Name, rev.Name)
		r.Events.Eventf(idx, nil, corev1.EventTypeNormal, "RevisionPruned", "Prune", "revision %s and collection %s deleted (revisionHistoryLimit %d)", rev.Name, rev.Collection, limit)
	}
	idx.Status.Revisions = keep
	return ctrl.Result{}, false, nil
}

// jobsStillRun reports whether a Job of the revision runs or is still being deleted (its
// pods may still write).
func (r *IndexReconciler) jobsStillRun(ctx context.Context, idx *ragopsv1alpha1.Index, rev string) (bool, error) {
	jobs, err := r.revisionJobs(ctx, idx, rev)
	if err != nil {
		return false, err
	}
	for _, j := range jobs {
		if s, _ := stateOf(&j); s == jobRunning || !j.DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}

// reconcileDelete removes the alias, then every revision collection, then the finalizer. With
// Weaviate unreachable it sets DeletionBlocked and retries with backoff; after
// FinalizerTimeout it gives up with a Warning event naming what is left behind.
func (r *IndexReconciler) reconcileDelete(ctx context.Context, idx *ragopsv1alpha1.Index) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(idx, Finalizer) {
		return ctrl.Result{}, nil
	}
	skip := idx.Annotations[AnnotationSkipCleanup] == "true"
	var leftovers []string
	if !skip {
		err := r.cleanupWeaviate(ctx, idx)
		if err != nil {
			age := time.Since(idx.DeletionTimestamp.Time)
			if age < r.Options.FinalizerTimeout {
				conditions.Set(idx, ragopsv1alpha1.ConditionDeletionBlocked, metav1.ConditionTrue, ReasonCleanupFailed,
					fmt.Sprintf("cannot delete Weaviate alias/collections yet (retrying with backoff; annotate %s=true to skip): %v", AnnotationSkipCleanup, err))
				return ctrl.Result{}, fmt.Errorf("index %s/%s cleanup: %w", idx.Namespace, idx.Name, err)
			}
			for _, rev := range idx.Status.Revisions {
				leftovers = append(leftovers, rev.Collection)
			}
			r.Events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonCleanupFailed, "Delete", "gave up after %s: left behind alias %s and collections %s: %v",
				r.Options.FinalizerTimeout, idx.Status.Alias, strings.Join(leftovers, ","), err)
		}
	}
	metrics.ForgetIndex(idx.Namespace, idx.Name)
	base := idx.DeepCopy()
	controllerutil.RemoveFinalizer(idx, Finalizer)
	if err := r.Patch(ctx, idx, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, err
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
	conditions.Set(idx, ragopsv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonDeleting, msg)
	conditions.Remove(idx, ragopsv1alpha1.ConditionReconciling)
	conditions.Remove(idx, ragopsv1alpha1.ConditionStalled)
	conditions.Remove(idx, ragopsv1alpha1.ConditionDeletionBlocked)
	return ctrl.Result{}, nil
}

func (r *IndexReconciler) cleanupWeaviate(ctx context.Context, idx *ragopsv1alpha1.Index) error {
	apiKey := ""
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		var sec corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: ref.Name}, &sec); err == nil {
			apiKey = string(sec.Data[ref.Key])
		}
	}
	store, err := r.Options.NewStore(idx.Spec.Weaviate, apiKey)
	if err != nil {
		return err
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
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
