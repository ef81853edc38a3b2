package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// The revision identity has two parts: the content (contentInputs: what changes the
// chunks and their vectors) and the storage settings (the vector index and the collection
// layout: how the same vectors are kept and searched). Revision hashes both, in the field
// order it always had, so existing revisions keep their names; ContentKey hashes the content
// alone, so a revision that differs from a kept one only in storage is filled by copying that
// revision's objects instead of embedding the corpus again (see reconcileBuild).

// contentInputs is what changes an Index's chunks and vectors.
type contentInputs struct {
	Strategy  ragopsv1alpha1.ChunkingStrategySpec `json:"strategy"`
	Model     ragopsv1alpha1.ModelSpec            `json:"model"`
	Format    ragopsv1alpha1.DocumentFormat       `json:"format"`
	Precision ragopsv1alpha1.Precision            `json:"precision,omitempty"`
	Sample    *ragopsv1alpha1.DocumentSample      `json:"sample,omitempty"`
}

// contentOf returns the content part of an Index's revision identity.
func contentOf(strategy ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, format ragopsv1alpha1.DocumentFormat) contentInputs {
	c := contentInputs{Strategy: strategy, Model: idx.Spec.Model, Format: format, Sample: idx.Spec.Sample}
	if p := precisionOf(idx.Spec.Embedder); p != ragopsv1alpha1.PrecisionFP32 {
		c.Precision = p
	}
	return c
}

// ContentKey returns the content key of an Index's revision: the hex SHA-256 (64 digits) of
// the JSON of the strategy spec, the model (name and source, so a new tokenizer or weights
// at a new location or checksum is another key), the corpus format, the precision when not
// fp32 and the document sample when set. The vector index, compression, sharding and
// replication are not part of it: revisions with equal keys on the same corpus revision hold
// the same chunks and vectors. The model folder's content hash is known only once a build
// ran; a copy takes the source revision's (RevisionStatus.ModelHash).
func ContentKey(strategy ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, format ragopsv1alpha1.DocumentFormat) string {
	return hashJSON(contentOf(strategy, idx, format))
}

// revisionInputs is everything that changes an Index's vectors or its collection: the
// content (contentInputs) and the storage settings (VectorIndex, Layout).
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
// of it: a content change is an incremental sync. Revisions that differ only in the vector
// index or the layout share a ContentKey.
func Revision(strategy ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, format ragopsv1alpha1.DocumentFormat) string {
	c := contentOf(strategy, idx, format)
	in := revisionInputs{Strategy: c.Strategy, Model: c.Model, VectorIndex: idx.Spec.VectorIndex, Format: c.Format,
		Precision: c.Precision, Layout: layoutOf(&idx.Spec), Sample: c.Sample}
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
