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
