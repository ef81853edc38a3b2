package build

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragops/ragops/vectorstore"
)

// Issue 56, syncs write one document at a time: a sync of 40 changed and 300 removed
// documents (of 400) leaves exactly what a clean build of the new corpus holds, counts them
// exactly, and writes in batches: one upsert and one stale-chunk delete per flush of
// changed documents, one delete of chunks and one of manifest records per
// vectorstore.DeleteBatchDocuments removed documents (the per-document path sent 40 upserts
// and 340 deletes).
func TestSyncWritesChangedAndRemovedDocumentsInBatches(t *testing.T) {
	const docs, changed, removed = 400, 40, 300
	f := newFixture(t, docs)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if res, err := f.run(t, false); err != nil || res.Documents != docs {
		t.Fatalf("build: %d documents, %v; want %d", res.Documents, err, docs)
	}
	// Changed: documents 0..39 get a text of another length (shorter or longer than before,
	// so some lose chunks); removed: documents 100..399.
	for i := range changed {
		body := fmt.Sprintf("# Besluit %d, gewijzigd\n\nHerzien voorstel %d.", i, i)
		if i%2 == 0 {
			for j := range 3 + i%3 {
				body += fmt.Sprintf(" Nieuwe alinea %d over de herziene begroting van jaar %d en de aangenomen motie.", j, 2100+i)
			}
		}
		writeDoc(t, f.dir, i, body)
	}
	for i := docs - removed; i < docs; i++ {
		if err := os.Remove(filepath.Join(f.dir, docName(i))); err != nil {
			t.Fatal(err)
		}
	}
	var store *vectorstore.Store
	p := f.plan
	p.Incremental = true
	res, err := Run(context.Background(), quiet, p, Options{opened: func(s *vectorstore.Store) { store = s }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != changed || res.Deleted != removed || res.Unchanged != docs-removed-changed {
		t.Errorf("sync: %d written, %d deleted, %d unchanged; want %d, %d, %d",
			res.Documents, res.Deleted, res.Unchanged, changed, removed, docs-removed-changed)
	}
	flushes := int64((changed + embedBatchDocuments - 1) / embedBatchDocuments)
	// Per DeleteBatchDocuments removed documents: one delete of their chunks, one of their
	// manifest records.
	deletes := flushes + 2*int64((removed+vectorstore.DeleteBatchDocuments-1)/vectorstore.DeleteBatchDocuments)
	if got := store.Requests(); got.Upserts > flushes || got.Deletes > deletes {
		t.Errorf("sync sent %d upserts and %d deletes; want at most %d and %d (batched per flush and per %d removed documents)",
			got.Upserts, got.Deletes, flushes, deletes, vectorstore.DeleteBatchDocuments)
	}

	// A clean build of the same corpus into another collection holds the same chunks.
	clean := f.plan
	clean.Revision = "r2"
	if clean.Collection, err = vectorstore.CollectionName("t", "besluiten", "r2"); err != nil {
		t.Fatal(err)
	}
	cres, err := Run(context.Background(), quiet, clean, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "synced collection against a clean build", f.objects(t), f.objectsOf(t, clean.Collection))
	if res.ShardChunks == nil || *res.ShardChunks != cres.Chunks {
		t.Errorf("sync reports %v chunks held, clean build %d", res.ShardChunks, cres.Chunks)
	}
	if n, err := f.store.CountDocuments(context.Background(), p.Collection); err != nil || n != docs-removed {
		t.Errorf("documents in the synced collection: %d (%v), want %d", n, err, docs-removed)
	}
}
