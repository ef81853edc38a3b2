package controllers

// Verify: a build or sync counts as done only when the collection holds what its shards
// reported. A mismatch (writes lost in a Weaviate outage, the collection deleted or wiped
// behind the operator's back) re-runs the Job, which resumes and embeds only what is missing,
// at most maxIncompleteRuns times; then the revision fails, or the sync stalls, with the counts.

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/vectorstore"
)

// ReasonIncompleteCollection: the revision's collection holds fewer (or more) chunks or
// documents than its shards reported, after every re-run.
const ReasonIncompleteCollection = "IncompleteCollection"

// maxIncompleteRuns bounds the re-runs of one build or sync whose collection does not hold
// what its shards reported.
const maxIncompleteRuns = 3

// collectionCounts are the chunks and documents (chunks with ordinal 0) of a collection, or
// what shards reported of it.
type collectionCounts struct{ chunks, documents int64 }

func (c collectionCounts) String() string {
	return fmt.Sprintf("%d chunks of %d documents", c.chunks, c.documents)
}

// reported sums the shards' reports: the chunks each shard's documents hold in the collection
// when it finished (ShardChunks; in a full build Chunks from a worker that does not report
// it) and, for a full build, the documents with chunks. A sync's shards report only the
// documents they touched, so its documents are not checked (documents is -1); known is false
// when a sync shard did not report ShardChunks.
func reported(results []plan.BuildResult, incremental bool) (c collectionCounts, known bool) {
	known = true
	for _, br := range results {
		switch {
		case br.ShardChunks != nil:
			c.chunks += *br.ShardChunks
		case incremental:
			known = false
		default:
			c.chunks += br.Chunks
		}
		c.documents += br.Documents
	}
	if incremental {
		c.documents = -1
	}
	return c, known
}

// countCollection counts what the collection holds; a missing collection holds nothing.
func countCollection(ctx context.Context, store Store, collection string, documents bool) (collectionCounts, error) {
	var nf *vectorstore.CollectionNotFoundError
	n, err := store.Count(ctx, collection)
	if errors.As(err, &nf) {
		return collectionCounts{}, nil
	} else if err != nil {
		return collectionCounts{}, err
	}
	c := collectionCounts{chunks: int64(n), documents: -1}
	if documents {
		d, err := store.CountDocuments(ctx, collection)
		if errors.As(err, &nf) {
			return collectionCounts{}, nil
		} else if err != nil {
			return collectionCounts{}, err
		}
		c.documents = int64(d)
	}
	return c, nil
}

// manifestStore reads and drops a revision's document manifest (vectorstore.Store does; a
// Store without it is not checked against a manifest).
type manifestStore interface {
	ManifestTotals(ctx context.Context, collection string) (vectorstore.ManifestTotals, error)
	DeleteManifest(ctx context.Context, collection string) error
}

// checkManifest compares the revision's document manifest (the records each build and sync
// shard reads its documents' state from) with what the collection holds, got: it returns ""
// when they agree (every record complete, their chunk counts summing to the collection's
// count, and, when got counts documents, one record a document) or the collection has no
// manifest (a revision built by a worker before manifests). A manifest that disagrees is
// dropped, so that the re-run the caller starts walks the collection once and writes the
// manifest again from what it holds (build.readStates' migration), and the disagreement is
// returned to be surfaced: a manifest is never trusted once it disagrees.
func checkManifest(ctx context.Context, store Store, collection string, got collectionCounts) (string, error) {
	ms, ok := store.(manifestStore)
	if u, wrapped := store.(interface{ Unwrap() Store }); !ok && wrapped {
		ms, ok = u.Unwrap().(manifestStore)
	}
	if !ok {
		return "", nil
	}
	tot, err := ms.ManifestTotals(ctx, collection)
	if err != nil || !tot.Covers {
		return "", err
	}
	if tot.Incomplete == 0 && tot.Chunks == got.chunks && (got.documents < 0 || tot.Documents == got.documents) {
		return "", nil
	}
	what := fmt.Sprintf("its manifest records %d chunks of %d documents (%d incomplete), the collection holds %d chunks",
		tot.Chunks, tot.Documents, tot.Incomplete, got.chunks)
	if err := ms.DeleteManifest(ctx, collection); err != nil {
		return "", err
	}
	return what + ": the manifest is dropped and written again from the collection", nil
}

// unread sums the documents the shards skipped, by every reason.
func unread(results []plan.BuildResult) int64 {
	var n int64
	for _, br := range results {
		for _, v := range br.Skipped {
			n += v
		}
	}
	return n
}

// verifyBuild checks a finished build: ok when its collection holds exactly the chunks and
// documents the shards reported, and the shards read (embedded or skipped) or left out by the
// Index's sample at least the documents the Corpus counted in the revision the build read. Otherwise the build is restarted (its next attempt resumes)
// or, after maxIncompleteRuns re-runs, the revision fails with a message naming both counts;
// the caller returns res and err.
func (r *IndexReconciler) verifyBuild(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, results []plan.BuildResult) (ok bool, res reconcile.Result, err error) {
	idx := st.idx
	want, _ := reported(results, false)
	got, err := countCollection(ctx, st.store, rev.Collection, true)
	if err != nil {
		res, err := r.collectionError(ctx, st, rev, "count the chunks of "+rev.Collection, err)
		return false, res, err
	}
	read := unread(results)
	for _, br := range results {
		read += br.Documents + br.SampledOut
	}
	corpusDocs := st.corpus.Status.Documents
	short := rev.CorpusRevision == st.corpus.Status.Revision && corpusDocs > 0 && read < corpusDocs
	manifest, err := checkManifest(ctx, st.store, rev.Collection, got)
	if err != nil {
		res, err := r.collectionError(ctx, st, rev, "read the manifest of "+rev.Collection, err)
		return false, res, err
	}
	if got == want && !short && manifest == "" {
		return true, reconcile.Proceed, nil
	}
	what := fmt.Sprintf("collection %s holds %s, the shards reported %s", rev.Collection, got, want)
	if got == want && manifest != "" {
		what = fmt.Sprintf("collection %s: %s", rev.Collection, manifest)
	} else if got == want {
		// The shards agree with the collection but did not read all the corpus holds (a plan
		// with fewer shards than the Job ran, documents listed by no shard).
		what = fmt.Sprintf("the shards embedded or skipped %d of the %d documents Corpus %s counted in revision %s", read, corpusDocs, st.corpus.Name, rev.CorpusRevision)
	}
	runs := rev.IncompleteRuns
	if runs >= maxIncompleteRuns {
		rev.Phase, rev.Reason, rev.Message = ragopsv1alpha1.RevisionFailed, ReasonIncompleteCollection, fmt.Sprintf("%s after %d re-runs", what, runs)
		idx.Status.Build, idx.Status.Progress = nil, ""
		st.events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonIncompleteCollection, "Verify", "revision %s: %s", rev.Name, rev.Message)
		return false, reconcile.Stalled(ReasonIncompleteCollection, fmt.Sprintf("revision %s: %s%s", rev.Name, rev.Message, retryHint(idx))), nil
	}
	if err := r.restartBuild(ctx, st, rev, what+": re-running the build for the missing documents"); err != nil {
		return false, reconcile.Stop, err
	}
	rev.IncompleteRuns = runs + 1
	st.events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonIncompleteCollection, "Rebuild", "revision %s: %s", rev.Name, rev.Message)
	return false, reconcile.StopFor(time.Second).With(reconcile.OutcomeProgressing, ReasonBuilding, fmt.Sprintf("revision %s: %s", rev.Name, rev.Message)), nil
}

// verifySync checks a finished corpus sync: ok when the active collection holds exactly the
// chunks the shards reported for their documents (the previous count plus added minus
// removed chunks). Otherwise the sync Job is deleted, and the next reconcile starts it again
// under a new name (workload.SyncJobName carries IncompleteRuns); it resumes, since documents already
// synced are unchanged. After maxIncompleteRuns re-runs the Index stalls naming the counts
// (the revision keeps serving) until a new ragops.dev/retry value allows as many more.
func (r *IndexReconciler) verifySync(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, jobName string, results []plan.BuildResult) (ok bool, res reconcile.Result, err error) {
	idx := st.idx
	want, known := reported(results, true)
	if !known {
		return true, reconcile.Proceed, nil
	}
	got, err := countCollection(ctx, st.store, rev.Collection, false)
	if err != nil {
		res, err := r.collectionError(ctx, st, rev, "count the chunks of "+rev.Collection, err)
		return false, res, err
	}
	manifest, err := checkManifest(ctx, st.store, rev.Collection, got)
	if err != nil {
		res, err := r.collectionError(ctx, st, rev, "read the manifest of "+rev.Collection, err)
		return false, res, err
	}
	if got.chunks == want.chunks && manifest == "" {
		rev.IncompleteRuns = 0
		return true, reconcile.Proceed, nil
	}
	what := fmt.Sprintf("after syncing corpus revision %s, collection %s holds %d chunks, the shards reported %d",
		st.corpus.Status.Revision, rev.Collection, got.chunks, want.chunks)
	if manifest != "" {
		what += "; " + manifest
	}
	if rev.IncompleteRuns >= maxIncompleteRuns {
		retry := idx.Annotations[AnnotationRetry]
		if retry == "" || retry == idx.Status.LastHandledRetry {
			return false, reconcile.Stalled(ReasonIncompleteCollection, fmt.Sprintf("%s after %d re-runs; revision %s keeps serving corpus revision %s%s",
				what, rev.IncompleteRuns, rev.Name, rev.CorpusRevision, retryHint(idx))), nil
		}
		idx.Status.LastHandledRetry, rev.IncompleteRuns = retry, 0
	}
	if err := deleteJob(ctx, r.Client, idx.Namespace, jobName); err != nil {
		return false, reconcile.Stop, err
	}
	rev.IncompleteRuns++
	st.events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonIncompleteCollection, "Resync", "revision %s: %s: syncing again (re-run %d)", rev.Name, what, rev.IncompleteRuns)
	return false, reconcile.StopFor(time.Second).With(reconcile.OutcomeProgressingKeepReady, ReasonSyncingCorpus, fmt.Sprintf("%s: syncing again (re-run %d)", what, rev.IncompleteRuns)), nil
}

// verifyCopy checks a finished copy (the completeness check of a revision filled from
// another's objects): ok when the revision's collection holds exactly the chunks and
// documents of the source revision's collection and what the copy reported. Otherwise (the
// source was synced meanwhile, writes were lost) the revision is built from the documents
// instead (copyFallback); the caller returns res and err.
func (r *IndexReconciler) verifyCopy(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, results []plan.BuildResult) (ok bool, res reconcile.Result, err error) {
	src := findRevision(st.idx, rev.CopyFrom)
	if src == nil {
		res, err := r.copyFallback(ctx, st, rev, fmt.Sprintf("revision %s copied from is no longer kept", rev.CopyFrom))
		return false, res, err
	}
	want, _ := reported(results, false)
	got, err := countCollection(ctx, st.store, rev.Collection, true)
	if err != nil {
		res, err := r.collectionError(ctx, st, rev, "count the chunks of "+rev.Collection, err)
		return false, res, err
	}
	from, err := countCollection(ctx, st.store, src.Collection, true)
	if err != nil {
		return false, reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeRetrying, ReasonWeaviateError, fmt.Sprintf("count the chunks of %s: %v", src.Collection, err)), nil
	}
	if got == want && got == from {
		return true, reconcile.Proceed, nil
	}
	res, err = r.copyFallback(ctx, st, rev, fmt.Sprintf("the copy from revision %s is incomplete: collection %s holds %s, the source %s holds %s, the copy reported %s", src.Name, rev.Collection, got, src.Collection, from, want))
	return false, res, err
}
