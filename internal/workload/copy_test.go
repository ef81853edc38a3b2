package workload

import (
	"encoding/json"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// TestCopyJob: the copy Job of a storage-only revision is the revision's build Job on one
// pod without a GPU, mounting neither corpus nor model, with a plan that names the source
// collection, the new storage settings and the source's model hash.
func TestCopyJob(t *testing.T) {
	idx, rev := index()
	idx.Spec.Compression = &ragopsv1alpha1.CompressionSpec{Type: ragopsv1alpha1.CompressionRQ}
	idx.Spec.VectorIndex.Type = "flat"
	from := &ragopsv1alpha1.RevisionStatus{Name: "f0f0f0f0", Collection: "Scifact_f0f0f0f0", ModelHash: "sha256:abc"}
	w := Copy(CopyInputs{Index: idx, Revision: rev, From: from,
		Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCUDA, Shards: 4}}, defaults)
	if w.Name != BuildJobName(idx, rev) || w.Kind != JobKindBuild || w.Shards != 1 || w.GPU {
		t.Fatalf("copy workload %s kind %s shards %d gpu %v; want the build Job on one CPU pod", w.Name, w.Kind, w.Shards, w.GPU)
	}
	job := w.Job()
	for _, m := range job.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.MountPath == plan.CorpusDir || m.MountPath == plan.ModelDir {
			t.Fatalf("copy Job mounts %s", m.MountPath)
		}
	}
	_, _, err := w.PlanConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(w.Plan)
	var p plan.Build
	if err := plan.Decode(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Copy == nil || p.Copy.Collection != from.Collection || p.Copy.Revision != from.Name || p.Collection != rev.Collection ||
		p.ModelHash != from.ModelHash || p.VectorIndex.Type != "flat" || p.Compression == nil || p.Shards != 1 || p.ModelDir != "" {
		t.Fatalf("copy plan %+v", p)
	}
}
