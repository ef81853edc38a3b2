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
}

// Revision returns the revision hash of an Index: the first 10 hex digits of SHA-256 over
// the JSON of the strategy spec, the model (name and source, so a new tokenizer or weights
// at a new location or checksum is a new revision), the vector index settings and the corpus
// format. Corpus content is not part of it: a content change is an incremental sync.
func Revision(strategy ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, format ragopsv1alpha1.DocumentFormat) string {
	raw, _ := json.Marshal(revisionInputs{Strategy: strategy, Model: idx.Spec.Model, VectorIndex: idx.Spec.VectorIndex, Format: format})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:10]
}
