package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/vectorcopy"
	"github.com/ragops/ragops/vectorstore"
)

// nextBuilding waits for the Index "besluiten" to desire a revision other than not and
// returns it once it is Building, with its build Job's plan.
func nextBuilding(t *testing.T, ns, not string) (ragopsv1alpha1.RevisionStatus, plan.Build, string) {
	t.Helper()
	var rev ragopsv1alpha1.RevisionStatus
	eventually(t, 30*time.Second, "a new building revision", func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		for _, r := range idx.Status.Revisions {
			if r.Name == idx.Status.Revision && r.Name != not && r.Phase == ragopsv1alpha1.RevisionBuilding {
				rev = r
				return true, nil
			}
		}
		return false, nil
	})
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev.Name))
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	return rev, p, job.Name
}

// patchIndexSpec changes the Index "besluiten" in ns with change.
func patchIndexSpec(t *testing.T, ns string, change func(*ragopsv1alpha1.IndexSpec)) {
	t.Helper()
	idx := getIndex(t, ns, "besluiten")
	base := idx.DeepCopy()
	change(&idx.Spec)
	if err := env.Client.Patch(context.Background(), idx, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// Issue 51, vectors reused: an Index whose compression (then vector index) changes gets a
// revision whose build Job copies the active revision's objects (plan.copy; the copy worker
// runs here against the real Weaviate and embeds nothing), checked by equal counts, and it
// takes the alias; a strategy change still builds from the documents.
func TestStorageOnlyChangeCopiesTheKeptRevision(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	patchIndexSpec(t, ns, func(s *ragopsv1alpha1.IndexSpec) {
		s.Compression = &ragopsv1alpha1.CompressionSpec{Type: ragopsv1alpha1.CompressionRQ}
	})
	r2, p, jobName := nextBuilding(t, ns, r1)
	if r2.CopyFrom != r1 || p.Copy == nil || p.Copy.Collection != c1 || p.Copy.Revision != r1 {
		t.Fatalf("revision %s copyFrom %q, plan copy %+v; want a copy of %s (%s)", r2.Name, r2.CopyFrom, p.Copy, r1, c1)
	}
	if p.Compression == nil || p.Compression.Type != ragopsv1alpha1.CompressionRQ || p.Collection != r2.Collection {
		t.Fatalf("copy plan compression %+v collection %s, want RQ into %s", p.Compression, p.Collection, r2.Collection)
	}
	// The worker: the copy reads the source with its vectors and writes the new collection,
	// and the source's manifest.
	writeManifest(t, c1)
	res, err := vectorcopy.Run(context.Background(), slog.Default(), p, vectorcopy.Options{OutageWait: -1, PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 0 || res.Documents != 3 || res.Chunks != 6 {
		t.Fatalf("copy result %+v, want 3 documents, 6 chunks, 0 tokens", res)
	}
	msg, _ := json.Marshal(res)
	finishJob(t, waitJob(t, ns, jobName), 0, string(msg))
	idx := waitActive(t, ns, "besluiten", r2.Name)
	for _, r := range idx.Status.Revisions {
		if r.Name == r2.Name && (r.Chunks != 6 || r.Documents != 3 || r.TokensPerSecond != 0 || r.CopyFrom != r1 || r.CorpusRevision != revisionOf(t, ns, r1).CorpusRevision) {
			t.Fatalf("copied revision %+v, want 6 chunks of 3 documents from %s at its corpus revision", r, r1)
		}
	}
	if got := aliasTarget(t, ns, "besluiten"); got != r2.Collection {
		t.Fatalf("alias on %s, want the copy %s", got, r2.Collection)
	}
	if n, err := directStore(t).Count(context.Background(), r2.Collection); err != nil || n != 6 {
		t.Fatalf("copy %s holds %d chunks (%v), want 6", r2.Collection, n, err)
	}
	if tot, err := directStore(t).ManifestTotals(context.Background(), r2.Collection); err != nil ||
		tot != (vectorstore.ManifestTotals{Covers: true, Documents: 3, Chunks: 6}) {
		t.Fatalf("manifest of the copy %s: %+v (%v), want the source's 3 documents of 6 chunks", r2.Collection, tot, err)
	}

	// The vector index alone: a copy again (of a revision holding the same objects).
	patchIndexSpec(t, ns, func(s *ragopsv1alpha1.IndexSpec) { s.VectorIndex.EfConstruction = 64 })
	r3, p3, _ := nextBuilding(t, ns, r2.Name)
	if r3.CopyFrom == "" || p3.Copy == nil || p3.VectorIndex.EfConstruction != 64 {
		t.Fatalf("revision %s after an efConstruction change: copyFrom %q plan copy %+v efConstruction %d; want a copy", r3.Name, r3.CopyFrom, p3.Copy, p3.VectorIndex.EfConstruction)
	}

	// The strategy: built from the documents.
	setStrategySize(t, ns, 96)
	r4, p4, _ := nextBuilding(t, ns, r3.Name)
	if r4.CopyFrom != "" || p4.Copy != nil || p4.Strategy.Size != 96 {
		t.Fatalf("revision %s after a strategy change: copyFrom %q plan copy %+v; want a build", r4.Name, r4.CopyFrom, p4.Copy)
	}
}

// Issue 51: a copy whose collection does not hold what the source holds (here the played
// copy wrote nothing) is not trusted: the revision is built from the documents instead.
func TestIncompleteCopyFallsBackToABuild(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	patchIndexSpec(t, ns, func(s *ragopsv1alpha1.IndexSpec) { s.VectorIndex.Type = "flat" })
	r2, p, jobName := nextBuilding(t, ns, r1)
	if p.Copy == nil {
		t.Fatalf("revision %s: no copy plan", r2.Name)
	}
	chunks := int64(6)
	msg, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 6, ShardChunks: &chunks, ModelHash: p.ModelHash})
	finishJob(t, waitJob(t, ns, jobName), 0, string(msg))
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build-2", r2.Name))
	var p2 plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p2); err != nil {
		t.Fatal(err)
	}
	if rev := revisionOf(t, ns, r2.Name); p2.Copy != nil || rev.CopyFrom != "" || rev.Attempt != 2 {
		t.Fatalf("after an incomplete copy: plan copy %+v, revision copyFrom %q attempt %d; want a build (attempt 2)", p2.Copy, rev.CopyFrom, rev.Attempt)
	}
}
