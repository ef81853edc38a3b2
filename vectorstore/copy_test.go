package vectorstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
)

// objectsOf reads every object of a collection with its vector, keyed by docID/ordinal.
func objectsOf(t *testing.T, s *Store, collection string) map[[2]any]Chunk {
	t.Helper()
	ctx := context.Background()
	out := map[[2]any]Chunk{}
	after := ""
	for {
		res, err := s.Client().Experimental().Search().WithCollection(collection).WithLimit(100).WithAfter(after).
			WithProperties(PropDocID, PropChunkOrdinal, PropText, PropRevision, PropDocHash).
			WithMetadata(&graphql.Metadata{ID: true, Vector: true}).Do(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			c := Chunk{Ordinal: intProp(r.Properties[PropChunkOrdinal]), Vector: r.Vector}
			c.DocID, _ = r.Properties[PropDocID].(string)
			c.Text, _ = r.Properties[PropText].(string)
			c.DocHash, _ = r.Properties[PropDocHash].(string)
			rev, _ := r.Properties[PropRevision].(string)
			if want := ChunkID(rev, c.DocID, c.Ordinal).String(); r.ID != want {
				t.Fatalf("%s: object %s of %s/%d is not its chunk ID %s in revision %s", collection, r.ID, c.DocID, c.Ordinal, want, rev)
			}
			key := [2]any{c.DocID, c.Ordinal}
			if _, dup := out[key]; dup {
				t.Fatalf("%s holds %s/%d twice", collection, c.DocID, c.Ordinal)
			}
			out[key] = c
		}
		if len(res) < 100 {
			return out
		}
		after = res[len(res)-1].ID
	}
}

// TestCopyCollectionKeepsObjectsAndVectors copies an uncompressed hnsw collection into one
// with other HNSW settings and RQ compression (what a storage-only revision change does): the copy holds every object
// once with the same text, hash and vector, under the new revision's chunk IDs, and a dense
// search finds each document's first chunk by its own vector in both. A copy stopped after
// its first page and run again ends with exactly the source's counts: no duplicates.
func TestCopyCollectionKeepsObjectsAndVectors(t *testing.T) {
	srv := sharedServer(t)
	s := storeFor(t, srv, Config{BatchSize: 16})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const dims = 32
	ids, texts := scifactDocs(t, 40)
	chunks := chunkDocs(t, ids, texts, dims)
	from, to := "RagopsTest_CopyFrom", "RagopsTest_CopyTo"
	for _, n := range []string{from, to} {
		t.Cleanup(func() { _ = s.DeleteCollection(context.Background(), n) })
	}
	if err := s.EnsureCollection(ctx, CollectionSpec{Name: from, Revision: "r1", Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(ctx, from, chunks); err != nil {
		t.Fatal(err)
	}
	spec := CollectionSpec{Name: to, Revision: "r2", Dimensions: dims,
		Index: VectorIndex{Type: IndexHNSW, MaxConnections: 16, Compression: Compression{Type: CompressionRQ}}}
	if err := s.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	const page = 25
	if len(chunks) < 3*page {
		t.Fatalf("%d chunks: the test needs several pages", len(chunks))
	}

	// Killed half-way: the first page is written, then the copy stops.
	stop, stopCancel := context.WithCancel(ctx)
	st, err := s.CopyCollection(stop, from, to, page, func(int64) { stopCancel() })
	if !errors.Is(err, context.Canceled) || st.Objects != page {
		t.Fatalf("stopped copy: %+v, %v; want %d objects and context.Canceled", st, err, page)
	}
	if n, err := s.Count(ctx, to); err != nil || n != page {
		t.Fatalf("after the stopped copy %s holds %d objects (%v), want %d", to, n, err, page)
	}

	// Run again: exact counts.
	var pages []int64
	st, err = s.CopyCollection(ctx, from, to, page, func(n int64) { pages = append(pages, n) })
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]bool{}
	for _, c := range chunks {
		docs[c.DocID] = true
	}
	if st.Objects != int64(len(chunks)) || st.Documents != int64(len(docs)) || len(pages) < 3 || !slices.IsSorted(pages) {
		t.Fatalf("copy stats %+v after pages %v, want %d objects of %d documents", st, pages, len(chunks), len(docs))
	}
	for _, c := range []string{from, to} {
		n, err := s.Count(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.CountDocuments(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(chunks) || d != len(docs) {
			t.Fatalf("%s holds %d chunks of %d documents, want %d of %d", c, n, d, len(chunks), len(docs))
		}
	}
	src, dst := objectsOf(t, s, from), objectsOf(t, s, to)
	for k, a := range src {
		b, ok := dst[k]
		if !ok {
			t.Fatalf("%v missing from the copy", k)
		}
		if a.Text != b.Text || a.DocHash != b.DocHash || !slices.Equal(a.Vector, b.Vector) {
			t.Fatalf("%v differs: text %q/%q hash %s/%s vectors equal %v", k, a.Text, b.Text, a.DocHash, b.DocHash, slices.Equal(a.Vector, b.Vector))
		}
	}
	// Retrieval: each document's first chunk is the top dense hit for its own vector in
	// both collections (exact here; RQ rescoring keeps it within the quantizer's loss).
	for _, id := range ids[:10] {
		v := src[[2]any{id, 0}].Vector
		for _, c := range []string{from, to} {
			hits, err := s.Search(ctx, c, Query{Mode: ModeDense, Vector: v, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 1 || hits[0].DocID != id || hits[0].Ordinal != 0 {
				t.Fatalf("%s: top hit for %s/0's vector is %+v", c, id, hits)
			}
		}
	}
}
