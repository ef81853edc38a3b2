package controllers

import (
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// TestRevisionPrecision: fp16 embeddings are other vectors, so an Index that switches to fp16
// gets a new revision; fp32, spelled out or defaulted, keeps the revision it had before the
// field existed.
func TestRevisionPrecision(t *testing.T) {
	strategy := ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 256}
	idx := &ragopsv1alpha1.Index{Spec: ragopsv1alpha1.IndexSpec{
		Model: ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
	}}
	base := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR)
	idx.Spec.Embedder.Precision = ragopsv1alpha1.PrecisionFP32
	if got := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR); got != base {
		t.Errorf("precision fp32: revision %s, want the unset one %s", got, base)
	}
	idx.Spec.Embedder.Precision = ragopsv1alpha1.PrecisionFP16
	if got := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR); got == base {
		t.Errorf("precision fp16: revision %s equals fp32's", got)
	}
	idx.Spec.Embedder.Precision = ""
	idx.Spec.Embedder.Device, idx.Spec.Embedder.Threads = ragopsv1alpha1.DeviceCUDA, 8
	if got := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR); got != base {
		t.Errorf("device and threads changed the revision: %s, want %s", got, base)
	}
}

// TestRevisionSample: a build on a sample holds other documents than one on the whole corpus
// (and than one on another sample), so each is its own revision; an Index without a sample
// keeps the hash it had before the field existed.
func TestRevisionSample(t *testing.T) {
	strategy := ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 256}
	idx := &ragopsv1alpha1.Index{Spec: ragopsv1alpha1.IndexSpec{
		Model: ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
	}}
	// The hash of this Index before spec.sample existed.
	const before = "20d6dc322a"
	if got := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR); got != before {
		t.Errorf("an unsampled Index: revision %s, want %s as before the field", got, before)
	}
	idx.Spec.Sample = &ragopsv1alpha1.DocumentSample{Fraction: 0.1, Seed: 1}
	s1 := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR)
	idx.Spec.Sample.Seed = 2
	s2 := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR)
	if s1 == before || s2 == before || s1 == s2 {
		t.Errorf("revisions: whole %s, seed 1 %s, seed 2 %s; want three", before, s1, s2)
	}
}
