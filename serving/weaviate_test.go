package serving_test

import (
	"testing"

	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// A real Weaviate (text2vec-transformers enabled) with a revision collection wired to ragops
// serve: importing SciFact documents with their build vectors sends nothing to the server (no
// re-vectorisation), and nearText through the alias returns exactly the top 10 of nearVector
// with the embedder's own query vector, for MiniLM and for e5-small-v2 (whose "query: " prefix
// the server must apply), with one query call to the server per nearText.
func TestWeaviateNearTextThroughTheAliasEqualsNearVector(t *testing.T) {
	dirs := map[string]string{"all-MiniLM-L6-v2": miniLM(t), "e5-small-v2": e5(t)}
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"all-MiniLM-L6-v2", "e5-small-v2"} {
		t.Run(name, func(t *testing.T) {
			srv := servingtest.Start(t, dirs[name], serving.Options{})
			idx := servingtest.SciFactIndex(t, store, srv, "serve", "scifact"+string(rune('a'+i)), "r1", 240)
			reg := srv.Registry()
			if n := counter(t, reg, "ragops_serve_texts_total", map[string]string{"task": "document"}); n != 0 {
				t.Fatalf("Weaviate sent %v imported documents to the model server: objects with vectors were re-vectorised", n)
			}
			queries := idx.Queries
			if len(queries) < 40 {
				t.Fatalf("only %d queries have all their documents indexed", len(queries))
			}
			texts := make([]string, len(queries))
			for k, q := range queries {
				texts[k] = q.Text
			}
			vecs, err := srv.Model.EmbedQueries(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			same, hitsAtOne := 0, 0
			for k, q := range queries {
				byText, err := store.Search(t.Context(), idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Text: q.Text, EmbedText: true, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				byVector, err := store.Search(t.Context(), idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Vector: vecs[k], Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(byText) != 10 || !equalHits(byText, byVector) {
					t.Errorf("query %s %q: nearText %v, nearVector %v", q.ID, q.Text, docIDs(byText), docIDs(byVector))
					continue
				}
				same++
				if idx.Qrels[q.ID][byText[0].DocID] > 0 {
					hitsAtOne++
				}
			}
			t.Logf("%d docs, %d queries: nearText top-10 = nearVector top-10 for %d; relevant document first for %d", len(idx.Docs), len(queries), same, hitsAtOne)
			if n := counter(t, reg, "ragops_serve_texts_total", map[string]string{"task": "query"}); n != float64(len(queries)) {
				t.Errorf("model server embedded %v queries, want %d (one per nearText)", n, len(queries))
			}
			if hitsAtOne < len(queries)/3 {
				t.Errorf("a relevant document first for only %d of %d queries: the vectors are not the model's", hitsAtOne, len(queries))
			}
		})
	}
}

func equalHits(a, b []vectorstore.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

func docIDs(hits []vectorstore.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.DocID
	}
	return out
}
