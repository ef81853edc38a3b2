package evaluator

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, Evaluations as a persona (spec.as): a retriever with a persona's groups returns,
// in every mode, only chunks those groups or the public may read, and counts none unreadable;
// the same retriever without groups does return the other classes. The count itself counts
// hits outside the groups.
func TestStoreRetrieverAsAPersonaSeesOnlyItsChunks(t *testing.T) {
	srv := weaviatetest.Start(t)
	ctx := context.Background()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: srv.HTTPAddr, GRPCHost: srv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	enc := hashEncoder{dims: 32}
	const coll = "RagChunks_t_persona_r1"
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: enc.dims,
		Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat}}); err != nil {
		t.Fatal(err)
	}
	classes := map[string][]string{"openbaar": {ragopsv1alpha1.PublicGroup}, "besloten": {"raad"}, "advies": {"juridisch"}, "intern": {}}
	var chunks []vectorstore.Chunk
	for class, groups := range classes {
		for i := range 15 {
			text := fmt.Sprintf("%s besluit %d over windenergie en de begroting van %s", class, i, class)
			chunks = append(chunks, vectorstore.Chunk{DocID: fmt.Sprintf("%s/%d", class, i), End: len(text), Text: text,
				Vector: enc.vector(text), AccessGroups: groups, AccessKey: "k1"})
		}
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	var unread atomic.Int64
	persona := StoreRetriever{Store: store, Target: coll, AccessGroups: []string{"raad"}, Unreadable: &unread}
	plain := StoreRetriever{Store: store, Target: coll}
	seenPlain := map[string]bool{}
	for _, text := range []string{"besloten windenergie", "advies begroting", "intern besluit", "openbaar besluit 3"} {
		vec := enc.vector(text)
		for _, q := range []Query{{Text: text, Mode: BM25}, {Text: text, Vector: vec, Mode: Dense}, {Text: text, Vector: vec, Mode: Hybrid, Alpha: 0.5}} {
			hits, err := persona.Search(ctx, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 {
				t.Errorf("%s %q: no hits as the persona", q.Mode, text)
			}
			for _, h := range hits {
				if c, _, _ := strings.Cut(h.DocID, "/"); c != "openbaar" && c != "besloten" {
					t.Errorf("%s %q: the persona (raad) retrieved %s", q.Mode, text, h.DocID)
				}
			}
			hits, err = plain.Search(ctx, q, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				c, _, _ := strings.Cut(h.DocID, "/")
				seenPlain[c] = true
			}
		}
	}
	if n := unread.Load(); n != 0 {
		t.Errorf("%d unreadable chunks counted, want 0", n)
	}
	if !seenPlain["advies"] || !seenPlain["intern"] {
		t.Errorf("unfiltered, the queries reach only %v: the persona check proves nothing", seenPlain)
	}
	hits := []vectorstore.Hit{{AccessGroups: []string{"raad"}}, {AccessGroups: []string{"juridisch"}}, {AccessGroups: nil}, {AccessGroups: []string{ragopsv1alpha1.PublicGroup}}}
	if n := unreadable(hits, []string{"raad", ragopsv1alpha1.PublicGroup}); n != 2 {
		t.Errorf("unreadable counts %d of a raad persona's hits, want 2 (juridisch, none)", n)
	}
}
