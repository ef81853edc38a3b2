package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
)

const (
	// ReasonModelLimitExceeded: the Index's ChunkingStrategy cannot fit its embedding model
	// (registry.CheckModelLimits, run by the build before it embeds anything); the message
	// names the field, the positions it needs and the model's limit.
	ReasonModelLimitExceeded = "ModelLimitExceeded"
	// ReasonModelChanged: the model folder's content hash is not the one the revision was
	// embedded with; the build or sync refused it before writing (plan.FailureModelChanged).
	ReasonModelChanged = "ModelChanged"
	// ReasonChunksTruncated is the reason of the Warning Event of a build that cut chunks to
	// the model's positions.
	ReasonChunksTruncated = "ChunksTruncated"
	// TruncatedReadyThreshold is the fraction of a revision's chunks above which the Ready
	// message reports truncation (1%).
	TruncatedReadyThreshold = 0.01
)

// buildFailureReason is the Stalled reason for a build or sync that failed with the worker's
// reason: ModelLimitExceeded when it refused a strategy that does not fit the model,
// ModelChanged when it refused a model folder that changed under the revision, else
// BuildFailed.
func buildFailureReason(reason plan.FailureReason) string {
	switch reason {
	case plan.FailureModelLimitExceeded:
		return ReasonModelLimitExceeded
	case plan.FailureModelChanged:
		return ReasonModelChanged
	}
	return ReasonBuildFailed
}

// observeTruncation sums the shards' truncated chunks into the revision's status, sets the
// per-revision metric and, when any chunk was cut, records a Warning Event on the Index.
func observeTruncation(rec events.EventRecorder, idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus, results []plan.BuildResult) {
	var n int64
	for _, br := range results {
		n += br.TruncatedChunks
	}
	rev.TruncatedChunks = n
	metrics.SetTruncatedChunks(idx.Namespace, idx.Name, rev.Name, n)
	if n > 0 {
		rec.Eventf(idx, nil, corev1.EventTypeWarning, ReasonChunksTruncated, "Build",
			"revision %s: %d of %d chunks were cut to the model's positions before embedding; their tails are in BM25 but not in the vectors (lower spec.size of ChunkingStrategy %s)",
			rev.Name, n, rev.Chunks, idx.Spec.StrategyRef.Name)
	}
}

// truncationNote is appended to the Ready message of a revision that truncated more than
// TruncatedReadyThreshold of its chunks; empty otherwise.
func truncationNote(rev *ragopsv1alpha1.RevisionStatus) string {
	if rev.Chunks <= 0 || float64(rev.TruncatedChunks) <= TruncatedReadyThreshold*float64(rev.Chunks) {
		return ""
	}
	return fmt.Sprintf("; %d of %d chunks (%.1f%%) were truncated to the model's positions", rev.TruncatedChunks, rev.Chunks, 100*float64(rev.TruncatedChunks)/float64(rev.Chunks))
}
