package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// revisionInputs is everything that changes an Index's vectors or its collection.
type revisionInputs struct {
	Strategy    ragopsv1alpha1.ChunkingStrategySpec `json:"strategy"`
	Model       ragopsv1alpha1.ModelSpec            `json:"model"`
	VectorIndex ragopsv1alpha1.VectorIndexSpec      `json:"vectorIndex"`
	Format      ragopsv1alpha1.DocumentFormat       `json:"format"`
	// Precision is absent for fp32, so revisions from before the field keep their hashes.
	Precision ragopsv1alpha1.Precision `json:"precision,omitempty"`
	// Layout is absent for a single-copy, unsharded, uncompressed collection, so the revisions
	// of Indexes that do not use these fields keep their hashes.
	Layout *collectionLayout `json:"layout,omitempty"`
	// Sample is absent for an Index built on its whole corpus.
	Sample *ragopsv1alpha1.DocumentSample `json:"sample,omitempty"`
}

// collectionLayout is what of replication, sharding and compression changes a collection
// (consistency levels do not: they are per request).
type collectionLayout struct {
	Factor       int32                           `json:"factor,omitempty"`
	AsyncEnabled bool                            `json:"asyncEnabled,omitempty"`
	Shards       int32                           `json:"shards,omitempty"`
	Compression  *ragopsv1alpha1.CompressionSpec `json:"compression,omitempty"`
}

// layoutOf returns the Index's collection layout, nil when it is the default one.
func layoutOf(spec *ragopsv1alpha1.IndexSpec) *collectionLayout {
	var l collectionLayout
	if r := spec.Replication; r != nil {
		if r.Factor > 1 {
			l.Factor = r.Factor
		}
		l.AsyncEnabled = r.AsyncEnabled
	}
	if sh := spec.Sharding; sh != nil {
		l.Shards = sh.DesiredCount
	}
	if c := spec.Compression; c != nil && c.Type != "" && c.Type != ragopsv1alpha1.CompressionNone {
		l.Compression = c
	}
	if l == (collectionLayout{}) {
		return nil
	}
	return &l
}

// Revision returns the revision hash of an Index: the first 10 hex digits of SHA-256 over
// the JSON of the strategy spec, the model (name and source, so a new tokenizer or weights
// at a new location or checksum is a new revision), the vector index settings, the corpus
// format, the embedder's precision when not fp32 and, when not the default, the collection
// layout (replication factor, async replication, shard count, compression) and the document
// sample when set. Consistency levels and corpus content are not part
// of it: a content change is an incremental sync.
func Revision(strategy ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, format ragopsv1alpha1.DocumentFormat) string {
	in := revisionInputs{Strategy: strategy, Model: idx.Spec.Model, VectorIndex: idx.Spec.VectorIndex, Format: format,
		Layout: layoutOf(&idx.Spec), Sample: idx.Spec.Sample}
	if p := precisionOf(idx.Spec.Embedder); p != ragopsv1alpha1.PrecisionFP32 {
		in.Precision = p
	}
	raw, _ := json.Marshal(in)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:10]
}

// precisionOf returns the embedder's precision, fp32 when unset.
func precisionOf(e ragopsv1alpha1.EmbedderSpec) ragopsv1alpha1.Precision {
	if e.Precision == "" {
		return ragopsv1alpha1.PrecisionFP32
	}
	return e.Precision
}

// queryModel returns the model and embedder settings that embed queries against rev: the
// model and precision rev was built with, or the Index's spec for a revision recorded before
// RevisionStatus carried them.
func queryModel(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) (ragopsv1alpha1.ModelSpec, ragopsv1alpha1.EmbedderSpec) {
	model, embedder := idx.Spec.Model, idx.Spec.Embedder
	if rev.Model != nil {
		model = *rev.Model
	}
	if rev.Precision != "" {
		embedder.Precision = rev.Precision
	}
	return model, embedder
}

// hashJSON returns the hex SHA-256 of v's JSON encoding (64 digits).
func hashJSON(v any) string {
	raw, _ := json.Marshal(v)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
