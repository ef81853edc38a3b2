package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// writeManifest writes the manifest of writeChunks' three documents (two chunks each) into
// collection's manifest, with the documents in incomplete recorded as not complete, and marks
// it as covering the collection, as a build worker does.
func writeManifest(t *testing.T, collection string, incomplete ...string) {
	t.Helper()
	ctx := context.Background()
	s := directStore(t)
	if err := s.EnsureManifest(ctx, collection); err != nil {
		t.Fatal(err)
	}
	var recs []vectorstore.ManifestRecord
	for _, doc := range []string{"a.md", "b.md", "c.md"} {
		done := true
		for _, d := range incomplete {
			done = done && d != doc
		}
		recs = append(recs, vectorstore.ManifestRecord{DocID: doc, Hash: "h", Chunks: 2, Complete: done, Shards: 1})
	}
	if err := s.PutManifest(ctx, collection, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkManifestCovers(ctx, collection); err != nil {
		t.Fatal(err)
	}
}

// Issue 51, one state read per sync: the completeness check compares the revision's manifest
// with its collection. A build whose shards' report agrees with the collection but whose
// manifest records a document incomplete is not activated: it is re-run with a message naming
// the manifest's counts, and the manifest is dropped (the re-run writes it again from the
// collection); the re-run whose manifest agrees turns Active.
func TestBuildWhoseManifestDisagreesIsRerun(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	idx := getIndex(t, ns, "besluiten")
	eventually(t, 30*time.Second, "build attempt 1", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) > 0 && idx.Status.Revisions[0].Phase == ragopsv1alpha1.RevisionBuilding, nil
	})
	rev, collection := idx.Status.Revisions[0].Name, idx.Status.Revisions[0].Collection
	chunks := int64(writeChunks(t, collection, rev))
	writeManifest(t, collection, "c.md")
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: chunks, ShardChunks: &chunks, Tokens: 600, Seconds: 2})
	finishJob(t, waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev)), 0, string(res))
	eventually(t, 60*time.Second, "attempt 2 after the manifest disagreed", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		r := idx.Status.Revisions[0]
		return r.Attempt == 2 && r.IncompleteRuns == 1 && r.Phase == ragopsv1alpha1.RevisionBuilding, nil
	})
	want := "its manifest records 4 chunks of 3 documents (1 incomplete), the collection holds 6 chunks"
	if m := idx.Status.Revisions[0].Message; !strings.Contains(m, want) {
		t.Errorf("revision message %q does not name the manifest's counts %q", m, want)
	}
	if idx.Status.ActiveRevision != "" {
		t.Fatalf("revision %s turned active with an incomplete manifest", idx.Status.ActiveRevision)
	}
	if covers, err := directStore(t).ManifestCovers(context.Background(), collection); err != nil || covers {
		t.Errorf("the disagreeing manifest was kept (covers %v, %v)", covers, err)
	}
	writeManifest(t, collection)
	finishJob(t, waitJob(t, ns, fmt.Sprintf("besluiten-%s-build-2", rev)), 0, string(res))
	waitActive(t, ns, "besluiten", rev)
}

// Issue 51, the extraction cache is deleted with its Corpus: a Corpus carries the cleanup
// finalizer, and deleting it drops its extraction cache collection on the Weaviate its Index
// names (the real one) before the Corpus goes; the Index's own collections stay.
func TestCorpusDeletionDropsItsExtractionCache(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	cache, err := vectorstore.ExtractionCacheName(ns, "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	s := directStore(t)
	if err := s.EnsureBlobCollection(ctx, cache); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBlob(ctx, cache, vectorstore.Blob{Key: "k", Group: "g", Payload: []byte("x"), Sum: "s"}); err != nil {
		t.Fatal(err)
	}
	var c ragopsv1alpha1.Corpus
	eventually(t, 30*time.Second, "the Corpus's cleanup finalizer", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c)
		return err == nil && controllerutil.ContainsFinalizer(&c, controllers.Finalizer), err
	})
	if err := env.Client.Delete(ctx, &c); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Corpus gone", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if ok, err := s.CollectionExists(ctx, cache); err != nil || ok {
		t.Errorf("extraction cache %s after its Corpus was deleted: exists %v (%v)", cache, ok, err)
	}
}
