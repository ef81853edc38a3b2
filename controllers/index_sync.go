package controllers

// Sync: corpus changes are embedded into the active revision by an incremental Job.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
)

// syncJobName names the sync Job of a corpus revision into a revision; after a retry
// (ragops.dev/retry) the name carries the handled retry, so a failed sync runs anew.
func syncJobName(idx *ragopsv1alpha1.Index, rev, corpusRev string) string {
	name := fmt.Sprintf("%s-%s-sync-%s", objectName(idx.Name, 32), rev, truncate(corpusRev, 8))
	if r := idx.Status.LastHandledRetry; r != "" {
		sum := sha256.Sum256([]byte(r))
		name += "-" + hex.EncodeToString(sum[:])[:6]
	}
	if r := findRevision(idx, rev); r != nil && r.IncompleteRuns > 0 {
		name += fmt.Sprintf("-r%d", r.IncompleteRuns) // a re-run after verifySync found counts off
	}
	return objectName(name, maxNameLength)
}

// reconcileCorpusSync re-embeds changed documents and deletes removed ones in the active
// revision when the Corpus content revision moved on.
func (r *IndexReconciler) reconcileCorpusSync(ctx context.Context, st *indexState) (stepResult, error) {
	idx := st.idx
	rev := findRevision(idx, st.revision)
	if rev == nil || rev.Phase != ragopsv1alpha1.RevisionActive {
		return proceed, nil
	}
	if rev.CorpusRevision == st.corpus.Status.Revision || st.corpus.Status.Revision == "" {
		if err := r.deleteFinishedSyncJobs(ctx, st, rev); err != nil {
			return stop, err
		}
		return proceed.with(outcomeReady, ReasonActive, servingMessage(rev, st.alias)), nil
	}
	w := r.embedWorkload(st, rev, true)
	job, err := w.ensure(ctx, r.Client, r.Options.reader(r.Client))
	if err != nil {
		return ensureFailed(err)
	}
	state, failure := stateOf(job)
	switch state {
	case jobRunning:
		if res, stuck, err := r.podsNotStarting(ctx, job, "corpus sync into revision "+rev.Name); stuck || err != nil {
			return res, err
		}
		r.refreshProgress(ctx, st, rev, job)
		return stopFor(r.Options.ProgressInterval).with(outcomeProgressingKeepReady, ReasonSyncingCorpus, fmt.Sprintf("syncing corpus revision %s into revision %s", st.corpus.Status.Revision, rev.Name)), nil
	case jobFailed:
		msg, err := jobFailure(ctx, r.Options.reader(r.Client), job, failure)
		if err != nil {
			return stop, err
		}
		if retry := idx.Annotations[AnnotationRetry]; retry != "" && retry != idx.Status.LastHandledRetry {
			// The next reconcile starts a sync Job under a new name (it carries the retry).
			idx.Status.LastHandledRetry = retry
			if err := deleteJob(ctx, r.Client, idx.Namespace, job.Name); err != nil {
				return stop, err
			}
			return stopFor(time.Second).with(outcomeProgressingKeepReady, ReasonSyncingCorpus, fmt.Sprintf("retry requested (%s=%s): syncing corpus revision %s into revision %s again", AnnotationRetry, retry, st.corpus.Status.Revision, rev.Name)), nil
		}
		metrics.ObserveBuildFailure(idx.Namespace, idx.Name, job.Name)
		return stalled(ReasonBuildFailed, fmt.Sprintf("corpus sync Job %s failed: %s; revision %s keeps serving corpus revision %s%s", job.Name, truncate(msg, 1024), rev.Name, rev.CorpusRevision, retryHint(idx))), nil
	}
	results, lost, err := r.shardResults(ctx, job)
	if err != nil {
		return stop, err
	}
	if len(lost) == 0 {
		if ok, res, err := r.verifySync(ctx, st, rev, job.Name, results); !ok {
			return res, err
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
	rev.CorpusRevision = st.corpus.Status.Revision
	rev.Skipped, rev.Message = nil, ""
	rev.OCR = plan.SumOCR(results)
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
	// The sync Job goes in a later reconcile, once this status (its result) is persisted: a
	// failed status patch then reads the result again instead of re-embedding the diff.
	return proceedFor(time.Second).with(outcomeReady, ReasonActive, servingMessage(rev, st.alias)), nil
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
