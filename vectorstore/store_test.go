package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/weaviate/weaviate/entities/models"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

const dims = 32

func newCollection(t *testing.T, s *Store, index, revision string, vi VectorIndex) string {
	t.Helper()
	name, err := CollectionName("test", index, revision)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureCollection(context.Background(), CollectionSpec{Name: name, Revision: revision, Dimensions: dims, Index: vi}); err != nil {
		t.Fatal(err)
	}
	return name
}

func mustCount(t *testing.T, s *Store, name string) int {
	t.Helper()
	n, err := s.Count(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReimportKeepsCount(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{BatchSize: 50})
	ctx := context.Background()
	for _, vi := range []VectorIndex{{Type: IndexFlat}, {Type: IndexHNSW, EfConstruction: 64, MaxConnections: 16, Ef: 64}} {
		t.Run(vi.Type, func(t *testing.T) {
			name := newCollection(t, s, "reimport-"+vi.Type, "r1", vi)
			// EnsureCollection is idempotent for the same spec and refuses other settings.
			if err := s.EnsureCollection(ctx, CollectionSpec{Name: name, Revision: "r1", Dimensions: dims, Index: vi}); err != nil {
				t.Fatalf("second EnsureCollection: %v", err)
			}
			var se *ServerError
			if err := s.EnsureCollection(ctx, CollectionSpec{Name: name, Revision: "r1", Dimensions: dims + 1, Index: vi}); !errors.As(err, &se) {
				t.Fatalf("EnsureCollection with other dimensions: got %v, want *ServerError", err)
			}
			ids, texts := scifactDocs(t, 60)
			chunks := chunkDocs(t, ids, texts, dims)
			if len(chunks) <= len(ids) {
				t.Fatalf("only %d chunks from %d documents: chunking too coarse for this test", len(chunks), len(ids))
			}
			for round := 1; round <= 2; round++ {
				if err := s.Upsert(ctx, name, chunks); err != nil {
					t.Fatalf("upsert round %d: %v", round, err)
				}
				if n := mustCount(t, s, name); n != len(chunks) {
					t.Fatalf("after upsert round %d: count %d, want %d", round, n, len(chunks))
				}
			}
		})
	}
}

func TestReplaceAndDeleteDocument(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "replace", "r1", VectorIndex{Type: IndexFlat})
	ids, texts := scifactDocs(t, 20)
	chunks := chunkDocs(t, ids, texts, dims)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	perDoc := map[string][]Chunk{}
	for _, c := range chunks {
		perDoc[c.DocID] = append(perDoc[c.DocID], c)
	}
	// Pick a document with at least 4 chunks.
	var victim string
	for _, id := range ids {
		if len(perDoc[id]) >= 4 {
			victim = id
			break
		}
	}
	if victim == "" {
		t.Fatal("no SciFact document among the first 20 has 4 chunks")
	}
	old := perDoc[victim]
	total := len(chunks)

	// Changed document, shorter: 2 chunks with new text.
	newText := []string{"zebrafish regeneration of the caudal fin", "kumquat orchards in spring"}
	repl := make([]Chunk, len(newText))
	for i, txt := range newText {
		repl[i] = Chunk{DocID: victim, Ordinal: i, Start: i * 100, End: i*100 + len(txt), Text: txt,
			DocHash: "changed", Vector: unitVector(txt, dims)}
	}
	if err := s.ReplaceDocument(ctx, name, victim, repl); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountDocument(ctx, name, victim); err != nil || n != 2 {
		t.Fatalf("after replace: document %s has %d chunks (err %v), want 2", victim, n, err)
	}
	if n := mustCount(t, s, name); n != total-len(old)+2 {
		t.Fatalf("after replace: count %d, want %d", n, total-len(old)+2)
	}
	// Old text of the document is gone from BM25 and the new one is found with its offsets.
	hits, err := s.Search(ctx, name, Query{Mode: ModeBM25, Text: old[len(old)-1].Text, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.DocID == victim && h.Ordinal >= 2 {
			t.Fatalf("stale chunk %s/%d still searchable", victim, h.Ordinal)
		}
	}
	hits, err = s.Search(ctx, name, Query{Mode: ModeBM25, Text: "kumquat", Limit: 3, WithText: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].DocID != victim || hits[0].Ordinal != 1 || hits[0].Start != 100 || hits[0].End != 100+len(newText[1]) || hits[0].Text != newText[1] {
		t.Fatalf("bm25 kumquat: got %+v, want only %s chunk 1 [100,%d)", hits, victim, 100+len(newText[1]))
	}

	hashes, err := s.DocumentHashes(ctx, name, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(hashes) != len(ids) || hashes[victim] != "changed" || hashes[ids[0]] == "" {
		t.Fatalf("DocumentHashes: %d documents, victim %q, first %q; want %d, \"changed\", non-empty", len(hashes), hashes[victim], hashes[ids[0]], len(ids))
	}

	// Removed document: no chunks left, the others untouched.
	n, err := s.DeleteDocument(ctx, name, victim)
	if err != nil || n != 2 {
		t.Fatalf("DeleteDocument: deleted %d (err %v), want 2", n, err)
	}
	if n, _ := s.CountDocument(ctx, name, victim); n != 0 {
		t.Fatalf("after delete: document has %d chunks", n)
	}
	if n := mustCount(t, s, name); n != total-len(old) {
		t.Fatalf("after delete: count %d, want %d", n, total-len(old))
	}
	hashes, err = s.DocumentHashes(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hashes[victim]; ok || len(hashes) != len(ids)-1 {
		t.Fatalf("DocumentHashes after delete: %d documents, victim present %v", len(hashes), ok)
	}

	// Bad input is refused with a message naming it.
	bad := []Chunk{{DocID: victim, Ordinal: 1, Vector: unitVector("x", dims)}}
	if err := s.ReplaceDocument(ctx, name, victim, bad); err == nil || !strings.Contains(err.Error(), "ordinals") {
		t.Fatalf("ReplaceDocument with ordinals {1}: got %v, want an ordinals error", err)
	}
}

func TestSearchModes(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "search", "r1", VectorIndex{Type: IndexHNSW})
	ids, texts := scifactDocs(t, 40)
	chunks := chunkDocs(t, ids, texts, dims)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	target := chunks[len(chunks)/2]

	hits, err := s.Search(ctx, name, Query{Mode: ModeDense, Vector: target.Vector, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 {
		t.Fatalf("nearVector: %d hits, want 5", len(hits))
	}
	h := hits[0]
	if h.DocID != target.DocID || h.Ordinal != target.Ordinal || h.Start != target.Start || h.End != target.End ||
		h.Revision != "r1" || h.ID != ChunkID("r1", target.DocID, target.Ordinal).String() ||
		len(h.HeadingPath) != 1 || h.HeadingPath[0] != target.HeadingPath[0] {
		t.Fatalf("nearVector top hit %+v, want chunk %s/%d [%d,%d)", h, target.DocID, target.Ordinal, target.Start, target.End)
	}
	if math.Abs(float64(h.Score)-1) > 1e-4 || hits[1].Score >= h.Score {
		t.Fatalf("nearVector scores %v, %v: want ~1 then lower", h.Score, hits[1].Score)
	}

	// The chunk's whole text (48 words) as a BM25 query. Weaviate's BlockMax WAND (the default
	// of new collections) missed such chunks; weaviatetest starts the server with
	// weaviatetest.EnvExactBM25, which the collection must record.
	class, err := s.client.Schema().ClassGetter().WithClassName(name).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if class.InvertedIndexConfig == nil || class.InvertedIndexConfig.UsingBlockMaxWAND {
		t.Fatalf("collection %s uses BlockMax WAND (inexact BM25): the server lacks %s", name, weaviatetest.EnvExactBM25)
	}
	q := target.Text
	if n := len(strings.Fields(q)); n < 40 {
		t.Fatalf("target chunk has %d words, want a long query of >= 40", n)
	}
	hits, err = s.Search(ctx, name, Query{Mode: ModeBM25, Text: q, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].ID != ChunkID("r1", target.DocID, target.Ordinal).String() || hits[0].Score <= 0 {
		t.Fatalf("bm25 with a chunk's own text: %+v, want chunk %s/%d first", hits, target.DocID, target.Ordinal)
	}
	for _, fusion := range []Fusion{FusionRanked, FusionRelativeScore} {
		for _, alpha := range []float32{0, 0.5, 1} {
			hits, err = s.Search(ctx, name, Query{Mode: ModeHybrid, Text: q, Vector: target.Vector, Alpha: alpha, Fusion: fusion, Limit: 4})
			if err != nil {
				t.Fatalf("hybrid %s alpha %v: %v", fusion, alpha, err)
			}
			if len(hits) != 4 || hits[0].DocID != target.DocID {
				t.Fatalf("hybrid %s alpha %v: %+v, want 4 hits with %s first", fusion, alpha, hits, target.DocID)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Fatalf("hybrid %s alpha %v: scores not descending: %v > %v", fusion, alpha, hits[i].Score, hits[i-1].Score)
				}
			}
		}
	}
	if _, err := s.Search(ctx, name, Query{Mode: ModeHybrid, Text: q, Limit: 3}); err == nil {
		t.Fatal("hybrid without a vector accepted")
	}
}

func TestAliasRepointUnderConcurrentQueries(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	ids, texts := scifactDocs(t, 30)
	a := newCollection(t, s, "alias", "blue", VectorIndex{Type: IndexFlat})
	b := newCollection(t, s, "alias", "green", VectorIndex{Type: IndexHNSW})
	chunks := chunkDocs(t, ids, texts, dims)
	for _, c := range []string{a, b} {
		if err := s.Upsert(ctx, c, chunks); err != nil {
			t.Fatal(err)
		}
	}
	alias, err := AliasName("test", "alias")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAlias(ctx, alias, a); err != nil {
		t.Fatal(err)
	}
	var inUse *CollectionInUseError
	if err := s.DeleteCollection(ctx, a); !errors.As(err, &inUse) || len(inUse.Aliases) != 1 || inUse.Aliases[0] != alias {
		t.Fatalf("DeleteCollection of the alias target: got %v, want *CollectionInUseError naming %s", err, alias)
	}

	var (
		stop    atomic.Bool
		queries atomic.Int64
		seen    sync.Map // revision -> true
		wg      sync.WaitGroup
		errMu   sync.Mutex
		errs    []string
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		errMu.Unlock()
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				c := chunks[(w*31+i)%len(chunks)]
				qs := []Query{
					{Mode: ModeDense, Vector: c.Vector, Limit: 10},
					{Mode: ModeBM25, Text: c.Text, Limit: 10},
					{Mode: ModeHybrid, Text: c.Text, Vector: c.Vector, Alpha: 0.5, Limit: 10},
				}
				hits, err := s.Search(ctx, alias, qs[i%3])
				queries.Add(1)
				if err != nil {
					fail("query %d: %v", i, err)
					continue
				}
				if len(hits) == 0 {
					fail("query %d (%s): no hits", i, qs[i%3].Mode)
					continue
				}
				for _, h := range hits {
					if h.Revision != hits[0].Revision {
						fail("query %d mixes revisions %s and %s", i, hits[0].Revision, h.Revision)
					}
				}
				seen.Store(hits[0].Revision, true)
			}
		}(w)
	}
	targets := []string{b, a}
	for i := 0; i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		if err := s.SetAlias(ctx, alias, targets[i%2]); err != nil {
			fail("repoint %d: %v", i, err)
		}
	}
	if err := s.SetAlias(ctx, alias, b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d queries failed, first: %s", len(errs), queries.Load(), errs[0])
	}
	for _, rev := range []string{"blue", "green"} {
		if _, ok := seen.Load(rev); !ok {
			t.Fatalf("no query of %d saw revision %s", queries.Load(), rev)
		}
	}
	t.Logf("%d queries through the alias during 20 repoints, none failed", queries.Load())

	if got, found, err := s.GetAlias(ctx, alias); err != nil || !found || got != b {
		t.Fatalf("GetAlias = %s, %v, %v; want %s", got, found, err, b)
	}
	if n := mustCount(t, s, alias); n != len(chunks) {
		t.Fatalf("count through alias %d, want %d", n, len(chunks))
	}
	// Now the old revision has no alias and can go.
	if err := s.DeleteCollection(ctx, a); err != nil {
		t.Fatal(err)
	}
	var nf *CollectionNotFoundError
	if _, err := s.Count(ctx, a); !errors.As(err, &nf) {
		t.Fatalf("count of deleted collection: got %v, want *CollectionNotFoundError", err)
	}
	if err := s.DeleteAlias(ctx, alias); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.GetAlias(ctx, alias); err != nil || found {
		t.Fatalf("GetAlias after delete: found %v, err %v", found, err)
	}
	if err := s.DeleteCollection(ctx, b); err != nil {
		t.Fatal(err)
	}
}

func TestTypedErrors(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "errors", "r1", VectorIndex{Type: IndexHNSW})
	ids, texts := scifactDocs(t, 3)
	chunks := chunkDocs(t, ids, texts, dims)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}

	t.Run("dimension mismatch on upsert", func(t *testing.T) {
		bad := append([]Chunk(nil), chunks[:2]...)
		bad[1].Vector = bad[1].Vector[:dims-5]
		var de *DimensionError
		err := s.Upsert(ctx, name, bad)
		if !errors.As(err, &de) || de.Collection != name || de.Expected != dims || de.Actual != dims-5 || de.DocID != bad[1].DocID || IsRetryable(err) {
			t.Fatalf("got %v, want *DimensionError %s expected %d actual %d", err, name, dims, dims-5)
		}
	})

	t.Run("dimension mismatch reported by the server", func(t *testing.T) {
		// A collection that records 8 dimensions but already holds a 16-dimensional vector,
		// written past this package: the server's per-object error must map to the type.
		other := newCollectionDims(t, s, "errors-server", 8)
		_, err := s.Client().Batch().ObjectsBatcher().WithObjects(&models.Object{
			Class: other, ID: strfmt.UUID(ChunkID("r1", "seed", 0).String()),
			Properties: map[string]any{PropDocID: "seed", PropText: "seed"}, Vector: unitVector("seed", 16),
		}).Do(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var de *DimensionError
		err = s.Upsert(ctx, other, []Chunk{{DocID: "d", Text: "x", Vector: unitVector("x", 8)}})
		if !errors.As(err, &de) || de.Collection != other || de.Expected != 16 || de.Actual != 8 || de.Err == nil {
			t.Fatalf("got %v, want *DimensionError from the server, expected 16 actual 8", err)
		}
	})

	t.Run("dimension mismatch on query", func(t *testing.T) {
		var de *DimensionError
		_, err := s.Search(ctx, name, Query{Mode: ModeDense, Vector: unitVector("q", dims+3), Limit: 3})
		if !errors.As(err, &de) || de.Expected != dims || de.Actual != dims+3 || IsRetryable(err) {
			t.Fatalf("got %v, want *DimensionError expected %d actual %d", err, dims, dims+3)
		}
	})

	t.Run("missing collection", func(t *testing.T) {
		missing, _ := CollectionName("test", "never-created", "r1")
		checks := map[string]error{}
		checks["upsert"] = s.Upsert(ctx, missing, chunks[:1])
		_, checks["search"] = s.Search(ctx, missing, Query{Mode: ModeBM25, Text: "cell", Limit: 3})
		_, checks["count"] = s.Count(ctx, missing)
		_, checks["delete document"] = s.DeleteDocument(ctx, missing, "x")
		checks["set alias"] = s.SetAlias(ctx, "Rag_test_alias_to_nothing", missing)
		for op, err := range checks {
			var nf *CollectionNotFoundError
			if !errors.As(err, &nf) || nf.Collection != missing || IsRetryable(err) {
				t.Errorf("%s: got %v, want *CollectionNotFoundError for %s", op, err, missing)
			}
		}
	})

	t.Run("stopped server", func(t *testing.T) {
		srv := weaviatetest.Start(t)
		fast := wait.Backoff{Duration: 20 * time.Millisecond, Factor: 2, Steps: 3}
		s2 := storeFor(t, srv, Config{Timeout: 5 * time.Second, Retry: fast})
		c2 := newCollection(t, s2, "errors-stopped", "r1", VectorIndex{Type: IndexFlat})
		if err := s2.Upsert(ctx, c2, chunks); err != nil {
			t.Fatal(err)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		checks := map[string]error{}
		checks["upsert"] = s2.Upsert(ctx, c2, chunks)
		_, checks["search"] = s2.Search(ctx, c2, Query{Mode: ModeDense, Vector: chunks[0].Vector, Limit: 3})
		_, checks["count"] = s2.Count(ctx, c2)
		_, _, checks["get alias"] = s2.GetAlias(ctx, "Rag_x")
		checks["ready"] = s2.Ready(ctx)
		for op, err := range checks {
			var re *RetryableError
			if !errors.As(err, &re) || !IsRetryable(err) {
				t.Errorf("%s on a stopped server: got %v, want *RetryableError", op, err)
			}
		}
	})
}

func newCollectionDims(t *testing.T, s *Store, index string, d int) string {
	t.Helper()
	name, _ := CollectionName("test", index, "r1")
	if err := s.EnsureCollection(context.Background(), CollectionSpec{Name: name, Revision: "r1", Dimensions: d, Index: VectorIndex{Type: IndexHNSW}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestBM25LongQueriesFindTheirChunk queries every chunk of 60 SciFact documents with its own
// text (up to 48 words) and checks that BM25 ranks that chunk first and that the top 5 do not
// depend on the limit. Weaviate 1.37.6's BlockMax WAND failed both on fresh imports
// (weaviate/weaviate#8704); weaviatetest.EnvExactBM25 switches new collections to exact WAND.
func TestBM25LongQueriesFindTheirChunk(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "bm25-long", "r1", VectorIndex{Type: IndexFlat})
	ids, texts := scifactDocs(t, 60)
	chunks := chunkDocs(t, ids, texts, dims)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, c := range chunks {
		if len(strings.Fields(c.Text)) >= 15 {
			long++
		}
		top, err := s.Search(ctx, name, Query{Mode: ModeBM25, Text: c.Text, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if want := ChunkID("r1", c.DocID, c.Ordinal).String(); len(top) == 0 || top[0].ID != want {
			t.Fatalf("bm25 with the text of chunk %s/%d (%d words): %+v, want that chunk first", c.DocID, c.Ordinal, len(strings.Fields(c.Text)), top)
		}
		deep, err := s.Search(ctx, name, Query{Mode: ModeBM25, Text: c.Text, Limit: len(chunks)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range top {
			// Equal scores may come in either order; scores must agree position by position.
			if top[i].Score != deep[i].Score || (top[i].ID != deep[i].ID && !tied(deep, i)) {
				t.Fatalf("chunk %s/%d query, rank %d: limit 5 gives %s %.5f, limit %d gives %s %.5f",
					c.DocID, c.Ordinal, i+1, top[i].ID, top[i].Score, len(chunks), deep[i].ID, deep[i].Score)
			}
		}
	}
	if long < len(chunks)/2 {
		t.Fatalf("only %d of %d chunks have >= 15 words: the fixture does not test long queries", long, len(chunks))
	}
}

// tied reports whether hits[i] has the same score as a neighbour.
func tied(hits []Hit, i int) bool {
	return (i > 0 && hits[i-1].Score == hits[i].Score) || (i+1 < len(hits) && hits[i+1].Score == hits[i].Score)
}

func TestCollectionExistsAsksTheServerNotTheCache(t *testing.T) {
	s := storeFor(t, sharedServer(t), Config{})
	ctx := context.Background()
	name := newCollection(t, s, "exists", "r1", VectorIndex{Type: IndexFlat})
	if _, err := s.Collection(ctx, name); err != nil { // now cached
		t.Fatal(err)
	}
	if ok, err := s.CollectionExists(ctx, name); !ok || err != nil {
		t.Fatalf("CollectionExists(%s) = %v, %v; want true", name, ok, err)
	}
	// Deleted behind the Store's back (another client, lost data): the cache must not answer.
	if err := s.Client().Schema().ClassDeleter().WithClassName(name).Do(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CollectionExists(ctx, name); ok || err != nil {
		t.Fatalf("CollectionExists after deletion = %v, %v; want false, nil", ok, err)
	}
	var nf *CollectionNotFoundError
	if err := s.SetAlias(ctx, "Rag_test_exists_alias", name); !errors.As(err, &nf) || nf.Collection != name {
		t.Fatalf("SetAlias to the deleted collection: %v, want *CollectionNotFoundError naming %s", err, name)
	}
	if _, err := s.Collection(ctx, name); !errors.As(err, &nf) {
		t.Fatalf("Collection after the miss: %v, want *CollectionNotFoundError (cache entry dropped)", err)
	}
}
