package controllers

// Sync: corpus changes are embedded by an incremental Job into the active revision (also
// while another revision is desired) and into a candidate before it takes the alias.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
)

// maxSyncRetries bounds the automatic retries of a failed corpus sync; then it stalls until a
// new ragops.dev/retry value.
const maxSyncRetries = 5

// reconcileCorpusSync keeps the active revision in step with the Corpus: when the content
// revision moved on, changed documents are re-embedded and removed ones deleted, also while
// another revision builds or gates (the revision behind the alias never serves a frozen
// corpus). It runs before the build step and stops the reconcile only when the active
// revision is the desired one; otherwise the build and rollout steps go on beside it.
func (r *IndexReconciler) reconcileCorpusSync(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	rev := findRevision(idx, idx.Status.ActiveRevision)
	if rev == nil || rev.Phase != ragopsv1alpha1.RevisionActive {
		return reconcile.Proceed, nil
	}
	desired := rev.Name == st.revision
	if rev.Strategy == nil && desired {
		rev.Strategy = st.strategy.Spec.DeepCopy() // recorded before the field existed
	}
	done, res, err := r.syncRevision(ctx, st, rev)
	if err != nil {
		return reconcile.Stop, err
	}
	if !desired {
		res.Stop, res.Outcome = false, reconcile.OutcomeNone // the build or gate of the desired revision decides
		return res, nil
	}
	if done {
		return res.With(reconcile.OutcomeReady, ReasonActive, servingMessage(rev, st.alias)), nil
	}
	return res, nil
}

// syncRevision brings a built revision's collection to the Corpus's current content
// revision with an incremental Job. done reports that it holds it; otherwise res says what
// runs or what stopped it. One sync of a revision runs at a time, and a running sync is
// never stopped because the Corpus moved on: it finishes, the revision records the corpus
// revision it wrote, and the next sync starts from there to the newest corpus revision
// (newer ones seen meanwhile are skipped: a sync brings the collection to the corpus's
// state, whatever state it left). So a Corpus that changes more often than a sync takes
// still gets synced, at most one sync behind, instead of restarting its sync forever. A
// sync Job being deleted (by a person, or as an Index of an older manager stopped it) is
// waited for. A new sync Job starts only when Options.MaxConcurrentSyncs allows it
// (syncSlot). A failed sync is retried automatically with back-off.
func (r *IndexReconciler) syncRevision(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus) (done bool, res reconcile.Result, err error) {
	idx := st.idx
	corpusRev := st.corpus.Status.Revision
	queued := idx.Namespace + "/" + idx.Name + "/" + rev.Name
	if corpusRev == "" {
		r.syncs.leave(queued)
		return true, reconcile.Proceed, nil
	}
	if rev.Strategy == nil && rev.Name != st.revision {
		// Recorded before revisions kept their strategy: it cannot be cut again.
		r.syncs.leave(queued)
		return true, reconcile.Proceed, nil
	}
	if rev.CorpusRevision == corpusRev {
		// The steady state: the revision holds the Corpus's revision. Without a sync Job of
		// the revision in the cache there is nothing to follow or delete, and nothing is
		// created, so the API server is not asked (a Job the cache has not seen yet brings
		// its own reconcile once it has: Owns).
		jobs, err := r.revisionJobs(ctx, idx, rev.Name)
		if err != nil {
			return false, reconcile.Stop, err
		}
		if !slices.ContainsFunc(jobs, func(j batchv1.Job) bool { return j.Labels[workload.LabelJobKind] == workload.JobKindSync }) {
			r.syncs.leave(queued)
			return true, reconcile.Proceed, nil
		}
	}
	current := workload.SyncJobName(idx, rev, corpusRev)
	inflight, stopping, others, haveCurrent, err := r.syncInFlight(ctx, st, rev, current)
	if err != nil {
		return false, reconcile.Stop, err
	}
	if len(stopping) > 0 {
		// Deleted while it ran (by a person, or an older manager that stopped superseded
		// syncs): it may have written part of its corpus revision, so a fresh sync runs next.
		rev.CorpusRevision = ""
		return false, reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus,
			fmt.Sprintf("waiting for the deleted sync Job(s) %s to stop before syncing corpus revision %s into revision %s", strings.Join(stopping, ","), corpusRev, rev.Name)), nil
	}
	if inflight == nil && rev.CorpusRevision == corpusRev {
		r.syncs.leave(queued)
		if err := r.deleteFinishedSyncJobs(ctx, st, rev); err != nil {
			return false, reconcile.Stop, err
		}
		return true, reconcile.Proceed, nil
	}
	var job *batchv1.Job
	if inflight != nil {
		// A running sync (of this or an earlier corpus revision), or a finished one whose
		// result is not recorded yet: follow it to its end.
		job = inflight
		if a := job.Annotations[workload.AnnotationCorpusRevision]; a != "" {
			corpusRev = a
		}
	} else {
		// The results of the revision's finished syncs are recorded (this reconcile reads
		// that status stored): they go before the next one, so a Job of a corpus revision
		// the Corpus comes back to is never mistaken for a fresh sync of it.
		for _, name := range others {
			if err := deleteJob(ctx, r.Client, idx.Namespace, name); err != nil {
				return false, reconcile.Stop, err
			}
		}
		if !haveCurrent {
			ok, msg, err := r.syncSlot(ctx, st, rev.Name, current)
			if err != nil {
				return false, reconcile.Stop, err
			}
			if !ok {
				return false, reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus, msg), nil
			}
		}
		w, err := r.embedWorkload(ctx, st, rev, true)
		if err != nil {
			return false, reconcile.Stop, err
		}
		job, err = ensureJob(ctx, r.Client, r.Options.reader(r.Client), w)
		if err != nil {
			res, err := ensureFailed(err)
			return false, res, err
		}
		r.syncs.leave(queued)
	}
	if !job.DeletionTimestamp.IsZero() {
		return false, reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus, jobGoingMessage(job, "corpus sync into revision "+rev.Name)), nil
	}
	state, failure := workload.StateOf(job)
	switch state {
	case workload.Running:
		if res, stuck, err := r.podsNotStarting(ctx, job, "corpus sync into revision "+rev.Name); stuck || err != nil {
			return false, res, err
		}
		if rev.Name == st.revision {
			r.refreshProgress(ctx, st, rev, job)
		}
		msg := fmt.Sprintf("syncing corpus revision %s into revision %s", corpusRev, rev.Name)
		if now := st.corpus.Status.Revision; now != corpusRev {
			msg += fmt.Sprintf("; corpus revision %s follows once it is done", now)
		}
		return false, reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus, msg), nil
	case workload.Failed:
		res, err := r.syncFailed(ctx, st, rev, job, failure)
		return false, res, err
	}
	results, lost, err := r.shardResults(ctx, job)
	if err != nil {
		return false, reconcile.Stop, err
	}
	if len(lost) == 0 {
		if ok, res, err := r.verifySync(ctx, st, rev, job.Name, results); !ok {
			return false, res, err
		}
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
	// What the Job wrote, not what the Corpus says now (it may have moved on meanwhile).
	rev.CorpusRevision = corpusRev
	if wrote := job.Annotations[workload.AnnotationCorpusRevision]; wrote != "" {
		rev.CorpusRevision = wrote
	}
	rev.Skipped, rev.Message, rev.SyncFailures = nil, "", 0
	rev.OCR, rev.Reads = plan.SumOCR(results), plan.SumReads(results)
	rev.InvalidMetadata = plan.SumInvalidMetadata(results)
	for _, br := range results {
		if rev.ModelHash == "" {
			rev.ModelHash = br.ModelHash // a revision built before the hash was recorded
		}
	}
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
	if rev.Name == idx.Status.ActiveRevision {
		idx.Status.Chunks = rev.Chunks
	}
	if rev.Name == st.revision {
		idx.Status.Build, idx.Status.Progress = nil, ""
	}
	st.events.Eventf(idx, nil, corev1.EventTypeNormal, "CorpusSynced", "Sync", "revision %s: %d documents re-embedded, %d deleted, %d unreadable kept their chunks", rev.Name, changed, deleted, kept)
	// The sync Job goes in a later reconcile, once this status (its result) is persisted: a
	// failed status patch then reads the result again instead of re-embedding the diff.
	return rev.CorpusRevision == st.corpus.Status.Revision, reconcile.ProceedFor(time.Second), nil
}

// syncFailed handles a failed sync Job: a new ragops.dev/retry value runs it again at once;
// otherwise it is retried automatically after 30 s, doubling per failure, at most
// maxSyncRetries times, and then stalls. The revision keeps serving what it held.
func (r *IndexReconciler) syncFailed(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, job *batchv1.Job, failure string) (reconcile.Result, error) {
	idx := st.idx
	corpusRev := st.corpus.Status.Revision
	msg, why, err := jobFailure(ctx, r.Options.reader(r.Client), job, failure)
	if err != nil {
		return reconcile.Stop, err
	}
	if retry := idx.Annotations[AnnotationRetry]; retry != "" && retry != idx.Status.LastHandledRetry {
		// The next reconcile starts a sync Job under a new name (it carries the retry).
		idx.Status.LastHandledRetry, rev.SyncFailures = retry, 0
		if err := deleteJob(ctx, r.Client, idx.Namespace, job.Name); err != nil {
			return reconcile.Stop, err
		}
		return reconcile.StopFor(time.Second).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus, fmt.Sprintf("retry requested (%s=%s): syncing corpus revision %s into revision %s again", AnnotationRetry, retry, corpusRev, rev.Name)), nil
	}
	failed := fmt.Sprintf("corpus sync Job %s failed: %s; revision %s keeps serving corpus revision %s", job.Name, truncate(msg, 1024), rev.Name, rev.CorpusRevision)
	if reason := buildFailureReason(why); reason != ReasonBuildFailed {
		// A refusal (the model folder changed, the strategy does not fit) does not pass by
		// itself: no automatic retry; a fix and ragops.dev/retry run it again.
		return reconcile.Stalled(reason, failed+retryHint(idx)), nil
	}
	if rev.SyncFailures >= maxSyncRetries {
		metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
		return reconcile.Stalled(ReasonBuildFailed, fmt.Sprintf("%s; gave up after %d automatic retries%s", failed, rev.SyncFailures, retryHint(idx))), nil
	}
	at := time.Now()
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed {
			at = c.LastTransitionTime.Time
		}
	}
	wait := time.Until(at.Add(syncBackoff(rev.SyncFailures)))
	if wait > 0 {
		if rev.SyncFailures == 0 {
			metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
		}
		return reconcile.Stalled(ReasonBuildFailed, fmt.Sprintf("%s; retrying automatically in %s (retry %d of %d)%s", failed, wait.Round(time.Second), rev.SyncFailures+1, maxSyncRetries, retryHint(idx))).Requeue(wait), nil
	}
	if err := deleteJob(ctx, r.Client, idx.Namespace, job.Name); err != nil {
		return reconcile.Stop, err
	}
	rev.SyncFailures++
	rev.SyncAttempt++
	return reconcile.StopFor(time.Second).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus, fmt.Sprintf("%s; retrying (retry %d of %d)", failed, rev.SyncFailures, maxSyncRetries)), nil
}

// syncBackoff is the wait before the automatic retry after n earlier retries: 30 s
// doubling, at most an hour.
func syncBackoff(n int32) time.Duration {
	return min(30*time.Second<<min(n, 7), time.Hour)
}

// syncInFlight reads the sync Jobs of rev (from the API server unless the cache shows one to
// follow: a sync Job created moments ago may not be in the cache yet, and missing it would
// start a second one beside it; syncRevision asks only when rev lags the Corpus or the cache
// holds a sync Job of it) and
// returns the one to follow, if any: the oldest that runs, else a finished one (not failed)
// whose corpus revision rev has not recorded, which is a result not read yet. stopping names
// those being deleted, which may still write; others the remaining finished ones (results
// recorded, or failed), which go before a new sync starts; current is never among them, and
// haveCurrent says whether a Job of that name exists.
func (r *IndexReconciler) syncInFlight(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, current string) (inflight *batchv1.Job, stopping, others []string, haveCurrent bool, err error) {
	// The cache first: a Job it shows to follow or to wait for is followed from it (its
	// events bring the next reconcile). Only a decision the cache could get wrong by lagging
	// (nothing to follow: delete the finished ones, start a new one) is made on the API
	// server's list.
	for _, reader := range []client.Reader{r.Client, r.Options.reader(r.Client)} {
		var list batchv1.JobList
		if err := reader.List(ctx, &list, client.InNamespace(st.idx.Namespace),
			client.MatchingLabels{workload.LabelManagedBy: workload.ManagedBy, workload.LabelRevision: rev.Name, workload.LabelJobKind: workload.JobKindSync}); err != nil {
			return nil, nil, nil, false, err
		}
		inflight, stopping, others, haveCurrent = pickSync(list.Items, st.idx, rev, current)
		if inflight != nil || len(stopping) > 0 {
			break
		}
	}
	return inflight, stopping, others, haveCurrent, nil
}

// pickSync is syncInFlight's decision on the listed sync Jobs of rev.
func pickSync(listed []batchv1.Job, idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus, current string) (inflight *batchv1.Job, stopping, others []string, haveCurrent bool) {
	jobs := listed[:0]
	for _, j := range listed {
		if metav1.IsControlledBy(&j, idx) {
			jobs = append(jobs, j)
		}
	}
	sort.SliceStable(jobs, func(a, b int) bool {
		return jobs[a].CreationTimestamp.Before(&jobs[b].CreationTimestamp)
	})
	var unread *batchv1.Job
	for i := range jobs {
		j := &jobs[i]
		state, _ := workload.StateOf(j)
		if j.Name == current {
			haveCurrent = true
		}
		switch {
		case !j.DeletionTimestamp.IsZero():
			if state == workload.Running {
				stopping = append(stopping, j.Name)
			}
		case state == workload.Running:
			if inflight == nil {
				inflight = j
			}
		case state == workload.Succeeded && j.Annotations[workload.AnnotationCorpusRevision] != rev.CorpusRevision && j.Name != current:
			if unread == nil {
				unread = j
			}
		case j.Name != current:
			others = append(others, j.Name)
		}
	}
	if inflight == nil {
		inflight = unread
	} else if unread != nil {
		others = append(others, unread.Name) // superseded by the running one, which writes later
	}
	return inflight, stopping, others, haveCurrent
}

// servingMessage is the Ready message of an Index whose revision serves, with the revision's
// note (documents kept after failing to read, results counted in Weaviate) when it has one.
func servingMessage(rev *ragopsv1alpha1.RevisionStatus, alias string) string {
	msg := fmt.Sprintf("revision %s serves %d chunks through alias %s", rev.Name, rev.Chunks, alias)
	if rev.Message != "" {
		msg += "; " + rev.Message
	}
	return msg + truncationNote(rev)
}

// deleteFinishedSyncJobs deletes the finished sync Jobs of a revision once its status
// records the corpus revision it holds (the last sync's result, or a failed sync
// that a newer corpus revision replaced).
func (r *IndexReconciler) deleteFinishedSyncJobs(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus) error {
	jobs, err := r.revisionJobs(ctx, st.idx, rev.Name)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Labels[workload.LabelJobKind] != workload.JobKindSync || !j.DeletionTimestamp.IsZero() {
			continue
		}
		if s, _ := workload.StateOf(&j); s != workload.Running {
			if err := deleteJob(ctx, r.Client, j.Namespace, j.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
