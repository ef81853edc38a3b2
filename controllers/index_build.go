package controllers

// Build: the desired revision is built by an embedder Job; superseded builds stop.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

// reconcileBuild starts or follows the build of the desired revision.
func (r *IndexReconciler) reconcileBuild(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	if err := r.stopSupersededBuilds(ctx, st); err != nil {
		return reconcile.Stop, err
	}
	rev := findRevision(idx, st.revision)
	if rev != nil && rev.Phase == ragopsv1alpha1.RevisionSuperseded {
		if err := r.restartBuild(ctx, st, rev, "the spec came back to this revision after its build was stopped"); err != nil {
			return reconcile.Stop, err
		}
	}
	if rev != nil && rev.Phase == ragopsv1alpha1.RevisionFailed {
		retry := idx.Annotations[AnnotationRetry]
		if retry == "" || retry == idx.Status.LastHandledRetry {
			return reconcile.Stalled(failedReason(rev), fmt.Sprintf("revision %s failed: %s%s", rev.Name, rev.Message, retryHint(idx))), nil
		}
		idx.Status.LastHandledRetry = retry
		if err := r.restartBuild(ctx, st, rev, fmt.Sprintf("retry requested (%s=%s)", AnnotationRetry, retry)); err != nil {
			return reconcile.Stop, err
		}
	}
	if rev != nil && rev.Strategy == nil {
		rev.Strategy = st.strategy.Spec.DeepCopy() // recorded before the field existed
	}
	if rev != nil && rev.Phase != ragopsv1alpha1.RevisionBuilding {
		return reconcile.Proceed, nil
	}
	if !conditions.IsReady(st.corpus) || st.corpus.Status.Revision == "" {
		return reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonCorpusNotReady, fmt.Sprintf("waiting for Corpus %q to sync", st.corpus.Name)), nil
	}
	collection, err := vectorstore.CollectionName(idx.Namespace, idx.Name, st.revision)
	if err != nil {
		return reconcile.Stalled(ReasonInvalidSpec, err.Error()), nil
	}
	if rev == nil {
		key := ContentKey(st.strategy.Spec, idx, st.corpus.Spec.Format)
		created := ragopsv1alpha1.RevisionStatus{
			Name: st.revision, Collection: collection, Phase: ragopsv1alpha1.RevisionBuilding,
			CorpusRevision: st.corpus.Status.Revision, CreationTime: ptr.To(metav1.Now()),
			Model: ptr.To(idx.Spec.Model), Precision: precisionOf(idx.Spec.Embedder), Strategy: st.strategy.Spec.DeepCopy(),
			ContentKey:  key,
			ServerImage: serverImage(idx.Spec.Model, r.Options.WorkerImage),
		}
		if src := copySource(idx, st.revision, key, st.corpus.Status.Revision); src != nil {
			created.CopyFrom = src.Name
			created.Message = fmt.Sprintf("filled from revision %s, which holds the same chunks and vectors (only how vectors are stored differs): nothing is embedded", src.Name)
		}
		idx.Status.Revisions = append([]ragopsv1alpha1.RevisionStatus{created}, idx.Status.Revisions...)
		rev = &idx.Status.Revisions[0]
	}
	var w *workload.Workload
	if rev.CopyFrom != "" {
		src := findRevision(idx, rev.CopyFrom)
		if src == nil {
			return r.copyFallback(ctx, st, rev, fmt.Sprintf("revision %s to copy from is no longer kept", rev.CopyFrom))
		}
		w, err = r.copyWorkload(ctx, st, rev, src)
	} else {
		w, err = r.embedWorkload(ctx, st, rev, false)
	}
	if unknown := (*ModulesUnknownError)(nil); errors.As(err, &unknown) {
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonWeaviateModulesUnknown, fmt.Sprintf("revision %s: %v", rev.Name, err)), nil
	}
	if err != nil {
		return reconcile.Stop, err
	}
	job, err := ensureJob(ctx, r.Client, r.Options.reader(r.Client), w)
	if err != nil {
		return ensureFailed(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonBuilding, jobGoingMessage(job, "revision "+rev.Name)), nil
	}
	state, failure := workload.StateOf(job)
	switch state {
	case workload.Running:
		if res, stuck, err := r.podsNotStarting(ctx, job, "revision "+rev.Name); stuck || err != nil {
			return res, err
		}
		r.refreshProgress(ctx, st, rev, job)
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonBuilding, fmt.Sprintf("building revision %s: %s documents", rev.Name, idx.Status.Progress)), nil
	case workload.Failed:
		msg, reason, err := jobFailure(ctx, r.Options.reader(r.Client), job, failure)
		if err != nil {
			return reconcile.Stop, err
		}
		if rev.CopyFrom != "" {
			return r.copyFallback(ctx, st, rev, fmt.Sprintf("the copy from revision %s failed: %s", rev.CopyFrom, truncate(msg, 512)))
		}
		if ptr.Deref(job.Status.FailedIndexes, "") != "" && job.Status.CompletedIndexes != "" {
			return r.shardsFailed(ctx, st, rev, job, msg, reason)
		}
		rev.Phase, rev.Message, rev.Reason = ragopsv1alpha1.RevisionFailed, truncate(msg, 1024), buildFailureReason(reason)
		rev.CompletionTime = ptr.To(metav1.Now())
		idx.Status.Build, idx.Status.Progress = nil, ""
		metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
		return reconcile.Stalled(rev.Reason, fmt.Sprintf("revision %s: Job %s failed: %s%s", rev.Name, job.Name, rev.Message, retryHint(idx))), nil
	}
	results, lost, err := r.shardResults(ctx, job)
	if err != nil {
		return reconcile.Stop, err
	}
	if hashes := modelHashes(results); len(hashes) > 1 {
		rev.Phase, rev.Reason = ragopsv1alpha1.RevisionFailed, ReasonModelChanged
		rev.Message = fmt.Sprintf("%s: the shards embedded with different model folders (%s): the folder changed during the build; retry once it is stable", plan.FailureModelChanged, strings.Join(hashes, ", "))
		rev.CompletionTime = ptr.To(metav1.Now())
		idx.Status.Build, idx.Status.Progress = nil, ""
		return reconcile.Stalled(ReasonModelChanged, fmt.Sprintf("revision %s: %s%s", rev.Name, rev.Message, retryHint(idx))), nil
	}
	if len(lost) > 0 && rev.IncompleteRuns < maxIncompleteRuns {
		// Without every shard's result the build cannot be verified: run it again. It resumes
		// (complete documents are read and counted, not embedded again) and reports for all.
		what := fmt.Sprintf("the results of shard(s) %s were lost (pods deleted before they were read)", strings.Join(lost, ","))
		runs := rev.IncompleteRuns
		if err := r.restartBuild(ctx, st, rev, what+": re-running the build to verify it (it resumes)"); err != nil {
			return reconcile.Stop, err
		}
		rev.IncompleteRuns = runs + 1
		st.events.Eventf(idx, nil, corev1.EventTypeWarning, "ShardResultsLost", "Rebuild", "revision %s: %s", rev.Name, rev.Message)
		return reconcile.StopFor(time.Second).With(reconcile.OutcomeProgressing, ReasonBuilding, fmt.Sprintf("revision %s: %s", rev.Name, rev.Message)), nil
	}
	if len(lost) == 0 && rev.CopyFrom != "" {
		if ok, res, err := r.verifyCopy(ctx, st, rev, results); !ok {
			return res, err
		}
	} else if len(lost) == 0 {
		if ok, res, err := r.verifyBuild(ctx, st, rev, results); !ok {
			return res, err
		}
	}
	embedded, seconds := applyBuildResults(rev, results, job)
	if src := findRevision(idx, rev.CopyFrom); src != nil {
		// The chunks are the source's: so are their token count, truncations and skips.
		rev.Tokens, rev.TruncatedChunks, rev.TokensPerSecond = src.Tokens, src.TruncatedChunks, 0
		rev.Skipped = maps.Clone(src.Skipped)
	}
	observeTruncation(st.events, idx, rev, results)
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
		rev.Message = fmt.Sprintf("the results of shard(s) %s were lost (pods deleted before they were read) in %d re-runs: documents and chunks counted in Weaviate, tokens and skipped documents unknown", strings.Join(lost, ","), rev.IncompleteRuns)
		st.events.Eventf(idx, nil, corev1.EventTypeWarning, "ShardResultsLost", "Build", "revision %s: %s", rev.Name, rev.Message)
	}
	metrics.ObserveBuild(idx.Namespace, idx.Name, rev.Name, rev.Documents, rev.Chunks, embedded, seconds)
	rev.Phase = ragopsv1alpha1.RevisionReady
	idx.Status.Build, idx.Status.Progress = nil, ""
	if rev.CopyFrom != "" {
		st.events.Eventf(idx, nil, corev1.EventTypeNormal, "RevisionCopied", "Build", "revision %s: %d documents, %d chunks copied from revision %s, 0 tokens embedded", rev.Name, rev.Documents, rev.Chunks, rev.CopyFrom)
		return reconcile.Proceed, nil
	}
	st.events.Eventf(idx, nil, corev1.EventTypeNormal, "RevisionBuilt", "Build", "revision %s: %d documents, %d chunks, %d tokens/s", rev.Name, rev.Documents, rev.Chunks, rev.TokensPerSecond)
	return reconcile.Proceed, nil
}

// shardsFailed fails rev whose Job ran out of retries on some shards (job.status.failedIndexes;
// each shard has its own budget) while others completed: the revision records the completed
// shards' exact figures (documents, chunks, tokens) and names the failed shards and why (msg,
// the last failed pod's). Their work stands in the collection: the retry the message names
// runs every shard again, and the completed shards' documents resume (read and counted, not
// embedded again), so only the failed shards' documents are embedded.
func (r *IndexReconciler) shardsFailed(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, job *batchv1.Job, msg string, reason plan.FailureReason) (reconcile.Result, error) {
	idx := st.idx
	completed, err := workload.Indexes(job.Status.CompletedIndexes)
	if err != nil {
		return reconcile.Stop, err
	}
	msgs, err := saveResults(ctx, r.Client, job)
	if err != nil {
		return reconcile.Stop, err
	}
	var results []plan.BuildResult
	var lost []string
	for _, i := range completed {
		m, ok := msgs[strconv.Itoa(i)]
		if !ok {
			lost = append(lost, strconv.Itoa(i))
			continue
		}
		var br plan.BuildResult
		if err := json.Unmarshal([]byte(m), &br); err != nil {
			return reconcile.Stop, fmt.Errorf("Job %s shard %d: unreadable result %q: %w", job.Name, i, truncate(m, 200), err)
		}
		results = append(results, br)
	}
	if len(lost) > 0 && time.Since(failedAt(job)) < r.Options.ResultGrace {
		// The pod cache can lag behind the Job's status: look again before counting them lost.
		return reconcile.Stop, fmt.Errorf("job %s failed but the results of its completed shard(s) %s are not visible yet", job.Name, strings.Join(lost, ","))
	}
	applyBuildResults(rev, results, job)
	shards := ptr.Deref(job.Spec.Completions, 1)
	rev.Phase, rev.Reason = ragopsv1alpha1.RevisionFailed, ReasonShardsFailed
	if reason != "" {
		rev.Reason = buildFailureReason(reason)
	}
	what := fmt.Sprintf("shard(s) %s of %d failed after their retries (last failure: %s); shard(s) %s completed: %d documents, %d chunks",
		*job.Status.FailedIndexes, shards, truncate(msg, 512), job.Status.CompletedIndexes, rev.Documents, rev.Chunks)
	if len(lost) > 0 {
		what += fmt.Sprintf(" (results of completed shard(s) %s lost: not counted)", strings.Join(lost, ","))
	}
	rev.Message = truncate(what+"; their chunks stay, and a retry embeds only the failed shards' documents (the others resume)", 1024)
	idx.Status.Build, idx.Status.Progress = nil, ""
	metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
	return reconcile.Stalled(rev.Reason, fmt.Sprintf("revision %s: Job %s: %s%s", rev.Name, job.Name, rev.Message, retryHint(idx))), nil
}

// failedAt is when job failed (its Failed condition's transition), now when it has none.
func failedAt(job *batchv1.Job) time.Time {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Now()
}

// copySource returns the kept revision whose objects can fill revision name: one whose
// content key is key (same chunks and vectors), whose build completed (Ready, Gating,
// Active or Rejected) and that holds corpus revision corpusRev; nil when none does (then
// the revision is built from the documents). Revisions recorded before the content key
// are never sources.
func copySource(idx *ragopsv1alpha1.Index, name, key, corpusRev string) *ragopsv1alpha1.RevisionStatus {
	for i := range idx.Status.Revisions {
		rev := &idx.Status.Revisions[i]
		if rev.Name == name || rev.ContentKey != key || key == "" || rev.CorpusRevision == "" || rev.CorpusRevision != corpusRev {
			continue
		}
		switch rev.Phase {
		case ragopsv1alpha1.RevisionReady, ragopsv1alpha1.RevisionGating, ragopsv1alpha1.RevisionActive, ragopsv1alpha1.RevisionRejected:
			return rev
		}
	}
	return nil
}

// copyWorkload describes the copy Job that fills rev from src's collection (workload.Copy).
func (r *IndexReconciler) copyWorkload(ctx context.Context, st *indexState, rev, src *ragopsv1alpha1.RevisionStatus) (*workload.Workload, error) {
	_, e := queryModel(st.idx, rev)
	server, err := r.modelServerFor(ctx, st, rev, false)
	if err != nil {
		return nil, err
	}
	return workload.Copy(workload.CopyInputs{Index: st.idx, Revision: rev, From: src, Embedder: e, Consistency: writeConsistency(st.idx),
		ModelServer: server, OutageWait: r.Options.WeaviateOutageWait}, r.Options.workloadDefaults()), nil
}

// copyFallback gives up filling rev by a copy (why says what went wrong) and builds it from
// the documents instead, in a next attempt that resumes from whatever the copy wrote
// (documents found complete, same hash and every chunk, are not embedded again).
func (r *IndexReconciler) copyFallback(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, why string) (reconcile.Result, error) {
	if err := r.restartBuild(ctx, st, rev, why+"; building from the documents instead"); err != nil {
		return reconcile.Stop, err
	}
	rev.CopyFrom = ""
	st.events.Eventf(st.idx, nil, corev1.EventTypeNormal, "CopyAbandoned", "Build", "revision %s: %s", rev.Name, rev.Message)
	return reconcile.StopFor(time.Second).With(reconcile.OutcomeProgressing, ReasonBuilding, fmt.Sprintf("revision %s: %s", rev.Name, rev.Message)), nil
}

// podsNotStarting stalls the reconcile (and looks again after ProgressInterval) when the
// pods of a running Job do not start; what names the work in the message.
func (r *IndexReconciler) podsNotStarting(ctx context.Context, job *batchv1.Job, what string) (reconcile.Result, bool, error) {
	msg, err := notStarting(ctx, r.Client, job, r.Options.PodStartTimeout, time.Now())
	if err != nil || msg == "" {
		return reconcile.Stop, false, err
	}
	return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeStalled, ReasonPodsNotStarting, fmt.Sprintf("%s: Job %s cannot start: %s", what, job.Name, msg)), true, nil
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

// modelHashes returns the distinct model folder hashes the shards report, sorted.
func modelHashes(results []plan.BuildResult) []string {
	var hs []string
	for _, br := range results {
		if br.ModelHash != "" && !slices.Contains(hs, br.ModelHash) {
			hs = append(hs, br.ModelHash)
		}
	}
	slices.Sort(hs)
	return hs
}

// applyBuildResults adds shard results to a revision's figures and returns the tokens this
// Job embedded (resumed documents' excluded) and its duration in seconds (its slowest shard).
func applyBuildResults(rev *ragopsv1alpha1.RevisionStatus, results []plan.BuildResult, job *batchv1.Job) (embedded int64, seconds float64) {
	var docs, chunks, tokens, stored int64
	skipped := map[string]int64{}
	for _, br := range results {
		docs += br.Documents
		chunks += br.Chunks
		tokens += br.Tokens
		stored += br.StoredBytes
		embedded += br.Tokens - br.ResumedTokens
		seconds = max(seconds, br.Seconds)
		for k, v := range br.Skipped {
			skipped[k] += v
		}
	}
	rev.InvalidMetadata = plan.SumInvalidMetadata(results)
	rev.Documents, rev.Chunks, rev.Tokens, rev.StoredBytes = docs, chunks, tokens, stored
	if seconds > 0 {
		rev.TokensPerSecond = int64(float64(embedded) / seconds)
	}
	if len(skipped) > 0 {
		rev.Skipped = skipped
	}
	rev.OCR, rev.Reads = plan.SumOCR(results), plan.SumReads(results)
	for _, br := range results {
		if rev.ModelHash == "" {
			rev.ModelHash = br.ModelHash
		}
	}
	if job.Status.CompletionTime != nil {
		rev.CompletionTime = job.Status.CompletionTime.DeepCopy()
	} else {
		rev.CompletionTime = ptr.To(metav1.Now())
	}
	return embedded, seconds
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
	if s := idx.Spec.Sample; s != nil {
		// A sampled build reads its sample only: the judged documents and fraction of the
		// others, about this many (0: unknown, the judged documents cannot be counted).
		p.DocumentsTotal = 0
		if share, exact := sampleShare(ctx, r.Options.reader(r.Client), idx.Namespace, s, st.corpus.Status.Documents); exact {
			p.DocumentsTotal = int64(math.Round(share * float64(st.corpus.Status.Documents)))
		}
	}
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

// embedWorkload describes the embedder Job of a revision (full build, or incremental sync;
// see workload.Embed).
func (r *IndexReconciler) embedWorkload(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, incremental bool) (*workload.Workload, error) {
	model, e := queryModel(st.idx, rev)
	server, err := r.modelServerFor(ctx, st, rev, incremental)
	if err != nil {
		return nil, err
	}
	return workload.Embed(workload.EmbedInputs{Index: st.idx, Revision: rev, Corpus: st.corpus, Strategy: st.strategy.Spec,
		Model: model, Embedder: e, Incremental: incremental, Consistency: writeConsistency(st.idx),
		ModelServer: server, OutageWait: r.Options.WeaviateOutageWait}, r.Options.workloadDefaults()), nil
}

// restartBuild turns rev back into a Building revision with the next Attempt, whose Job
// (<index>-<revision>-build-<attempt>) the build step then creates; the previous attempt's
// Job is deleted. why goes into the revision's message and the log.
func (r *IndexReconciler) restartBuild(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, why string) error {
	idx := st.idx
	if err := deleteJob(ctx, r.Client, idx.Namespace, workload.BuildJobName(idx, rev)); err != nil {
		return err
	}
	rev.Attempt = max(rev.Attempt, 1) + 1
	rev.Phase, rev.Reason = ragopsv1alpha1.RevisionBuilding, ""
	rev.Message = fmt.Sprintf("%s: rebuilding (attempt %d)", why, rev.Attempt)
	rev.CorpusRevision = st.corpus.Status.Revision
	rev.Documents, rev.Chunks, rev.Tokens, rev.StoredBytes, rev.TokensPerSecond, rev.Skipped, rev.IncompleteRuns, rev.OCR, rev.Reads = 0, 0, 0, 0, 0, nil, 0, nil, nil
	rev.CreationTime, rev.CompletionTime = ptr.To(metav1.Now()), nil
	if idx.Status.ActiveRevision == rev.Name {
		// Nothing serves now; the rebuilt revision takes the alias without a gate.
		idx.Status.ActiveRevision, idx.Status.Chunks = "", 0
	}
	log.FromContext(ctx).Info("rebuilding revision", "revision", rev.Name, "attempt", rev.Attempt, "why", why)
	return nil
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
		if err := deleteJob(ctx, r.Client, idx.Namespace, workload.BuildJobName(idx, rev)); err != nil {
			return err
		}
		rev.Phase = ragopsv1alpha1.RevisionSuperseded
		rev.Message = fmt.Sprintf("superseded by revision %s before its build finished: its Job was stopped", st.revision)
		rev.CompletionTime = ptr.To(metav1.Now())
		idx.Status.Build, idx.Status.Progress = nil, ""
		st.events.Eventf(idx, nil, corev1.EventTypeNormal, "BuildSuperseded", "Build", "revision %s: %s", rev.Name, rev.Message)
	}
	return nil
}

// ensureFailed turns a failed Job creation into the step's result: a Job of that name that
// another object controls stalls the Index with a condition naming it.
// failedReason is the Stalled reason of a Failed revision: the one recorded when it failed,
// BuildFailed for a revision recorded before the field.
func failedReason(rev *ragopsv1alpha1.RevisionStatus) string {
	if rev.Reason != "" {
		return rev.Reason
	}
	return ReasonBuildFailed
}

// jobGoingMessage says that the Job the status names for what is being deleted (by a user,
// or by a reconcile whose status patch was then refused) and runs again once it is gone.
func jobGoingMessage(job *batchv1.Job, what string) string {
	return fmt.Sprintf("%s: Job %s is being deleted; it runs again once it is gone", what, job.Name)
}

func ensureFailed(err error) (reconcile.Result, error) {
	var conflict *JobConflictError
	if errors.As(err, &conflict) {
		return reconcile.Stalled(ReasonJobConflict, conflict.Error()), nil
	}
	return reconcile.Stop, err
}

// revisionJobs lists the Jobs this Index controls for one revision (builds and syncs).
func (r *IndexReconciler) revisionJobs(ctx context.Context, idx *ragopsv1alpha1.Index, rev string) ([]batchv1.Job, error) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(idx.Namespace), client.MatchingFields{jobOwnerKey: "Index/" + idx.Name}); err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range jobs.Items {
		if j.Labels[workload.LabelRevision] == rev && metav1.IsControlledBy(&j, idx) {
			out = append(out, j)
		}
	}
	return out, nil
}
