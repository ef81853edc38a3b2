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

// TestContentKeySplitsStorageFromContent: the vector index, compression, sharding and
// replication change the revision but not its content key; the strategy, the model, the
// precision and the sample change both. A new revision whose key and corpus revision equal
// a kept revision's gets that revision as its copy source; one with another strategy gets
// none (it is built).
func TestContentKeySplitsStorageFromContent(t *testing.T) {
	strategy := ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 256}
	newIndex := func() *ragopsv1alpha1.Index {
		return &ragopsv1alpha1.Index{Spec: ragopsv1alpha1.IndexSpec{
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "hnsw", Distance: "cosine", EfConstruction: 128, MaxConnections: 32},
		}}
	}
	base := newIndex()
	rev, key := Revision(strategy, base, ragopsv1alpha1.FormatBEIR), ContentKey(strategy, base, ragopsv1alpha1.FormatBEIR)
	storage := map[string]func(*ragopsv1alpha1.Index){
		"vector index type": func(i *ragopsv1alpha1.Index) { i.Spec.VectorIndex.Type = "flat" },
		"efConstruction":    func(i *ragopsv1alpha1.Index) { i.Spec.VectorIndex.EfConstruction = 256 },
		"compression": func(i *ragopsv1alpha1.Index) {
			i.Spec.Compression = &ragopsv1alpha1.CompressionSpec{Type: ragopsv1alpha1.CompressionRQ}
		},
		"shards":      func(i *ragopsv1alpha1.Index) { i.Spec.Sharding = &ragopsv1alpha1.ShardingSpec{DesiredCount: 3} },
		"replication": func(i *ragopsv1alpha1.Index) { i.Spec.Replication = &ragopsv1alpha1.ReplicationSpec{Factor: 3} },
	}
	for what, change := range storage {
		idx := newIndex()
		change(idx)
		r, k := Revision(strategy, idx, ragopsv1alpha1.FormatBEIR), ContentKey(strategy, idx, ragopsv1alpha1.FormatBEIR)
		if r == rev || k != key {
			t.Errorf("%s: revision %s (was %s), content key changed %v; want a new revision with the same key", what, r, rev, k != key)
		}
		kept := &ragopsv1alpha1.Index{Status: ragopsv1alpha1.IndexStatus{Revisions: []ragopsv1alpha1.RevisionStatus{
			{Name: rev, Phase: ragopsv1alpha1.RevisionActive, ContentKey: key, CorpusRevision: "c1"}}}}
		if src := copySource(kept, r, k, "c1"); src == nil || src.Name != rev {
			t.Errorf("%s: copy source %v, want revision %s", what, src, rev)
		}
		if src := copySource(kept, r, k, "c2"); src != nil {
			t.Errorf("%s: copy source %s holds another corpus revision", what, src.Name)
		}
	}
	content := map[string]func(*ragopsv1alpha1.Index, *ragopsv1alpha1.ChunkingStrategySpec){
		"strategy": func(_ *ragopsv1alpha1.Index, s *ragopsv1alpha1.ChunkingStrategySpec) { s.Size = 512 },
		"model": func(i *ragopsv1alpha1.Index, _ *ragopsv1alpha1.ChunkingStrategySpec) {
			i.Spec.Model.ImagePath = "/models/e5"
		},
		"precision": func(i *ragopsv1alpha1.Index, _ *ragopsv1alpha1.ChunkingStrategySpec) {
			i.Spec.Embedder.Precision = ragopsv1alpha1.PrecisionFP16
		},
		"sample": func(i *ragopsv1alpha1.Index, _ *ragopsv1alpha1.ChunkingStrategySpec) {
			i.Spec.Sample = &ragopsv1alpha1.DocumentSample{Fraction: 0.5, Seed: 1}
		},
	}
	for what, change := range content {
		idx, s := newIndex(), strategy
		change(idx, &s)
		r, k := Revision(s, idx, ragopsv1alpha1.FormatBEIR), ContentKey(s, idx, ragopsv1alpha1.FormatBEIR)
		if r == rev || k == key {
			t.Errorf("%s: revision %s (was %s), content key changed %v; want both changed", what, r, rev, k != key)
		}
		kept := &ragopsv1alpha1.Index{Status: ragopsv1alpha1.IndexStatus{Revisions: []ragopsv1alpha1.RevisionStatus{
			{Name: rev, Phase: ragopsv1alpha1.RevisionActive, ContentKey: key, CorpusRevision: "c1"}}}}
		if src := copySource(kept, r, k, "c1"); src != nil {
			t.Errorf("%s: copy source %s, want none (a build)", what, src.Name)
		}
	}
}
