package vectorstore

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// inferenceRecorder answers Weaviate's text2vec-transformers calls with unitVector(text) and
// records them (path and config), so a test sees which URL and task Weaviate used.
type inferenceRecorder struct {
	mu    sync.Mutex
	calls []inferenceCall
}

type inferenceCall struct {
	Path, Text, Task, Pooling string
}

func (r *inferenceRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !strings.HasSuffix(req.URL.Path, "/vectors") {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var body struct {
		Text   string `json:"text"`
		Config struct {
			Pooling string `json:"pooling_strategy"`
			Task    string `json:"task_type"`
		} `json:"config"`
	}
	json.NewDecoder(req.Body).Decode(&body)
	r.mu.Lock()
	r.calls = append(r.calls, inferenceCall{Path: req.URL.Path, Text: body.Text, Task: body.Config.Task, Pooling: body.Config.Pooling})
	r.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"text": body.Text, "dims": dims, "vector": unitVector(body.Text, dims)})
}

func (r *inferenceRecorder) take() []inferenceCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// A collection wired to a model server records the text2vec-transformers settings; objects
// imported with vectors are not sent to the passage URL; nearText and hybrid with text only,
// through the alias, send the query text to the query URL with task_type query, and rank as
// nearVector and hybrid with that vector do. A server without the module refuses the
// collection; the settings are part of the collection's identity.
func TestTransformersCollection(t *testing.T) {
	rec := &inferenceRecorder{}
	inf := httptest.NewServer(rec)
	defer inf.Close()
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	s := storeFor(t, srv, Config{})
	ctx := context.Background()
	name, _ := CollectionName("test", "served", "r1")
	vec := Transformers{PassageURL: inf.URL + "/passage", QueryURL: inf.URL + "/query"}
	spec := CollectionSpec{Name: name, Revision: "r1", Dimensions: dims, Index: VectorIndex{Type: IndexFlat}, Vectorizer: vec}
	if err := s.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureCollection(ctx, spec); err != nil {
		t.Fatalf("second EnsureCollection: %v", err)
	}
	other := spec
	other.Vectorizer.QueryURL = inf.URL + "/elsewhere"
	var se *ServerError
	if err := s.EnsureCollection(ctx, other); !errors.As(err, &se) {
		t.Fatalf("EnsureCollection with another query URL: %v, want *ServerError", err)
	}
	class, err := s.client.Schema().ClassGetter().WithClassName(name).Do(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := class.ModuleConfig.(map[string]any)[ModuleTransformers].(map[string]any)
	if class.Vectorizer != ModuleTransformers || mc["queryInferenceUrl"] != vec.QueryURL || mc["passageInferenceUrl"] != vec.PassageURL || mc["poolingStrategy"] != "masked_mean" {
		t.Fatalf("collection vectorizer %q, module config %v", class.Vectorizer, class.ModuleConfig)
	}

	ids, texts := scifactDocs(t, 30)
	chunks := chunkDocs(t, ids, texts, dims)
	if err := s.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	if calls := rec.take(); len(calls) != 0 {
		t.Fatalf("import with vectors called the model server %d times, e.g. %+v", len(calls), calls[0])
	}
	alias, _ := AliasName("test", "served")
	if err := s.SetAlias(ctx, alias, name); err != nil {
		t.Fatal(err)
	}
	query := "cerebral white matter in newborns"
	got, err := s.Search(ctx, alias, Query{Mode: ModeDense, Text: query, EmbedText: true, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	calls := rec.take()
	if len(calls) != 1 || calls[0] != (inferenceCall{Path: "/query/vectors", Text: query, Task: "query", Pooling: "masked_mean"}) {
		t.Fatalf("nearText called %+v, want one query call at /query/vectors", calls)
	}
	want, err := s.Search(ctx, alias, Query{Mode: ModeDense, Vector: unitVector(query, dims), Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !sameIDs(got, want) {
		t.Fatalf("nearText %v differs from nearVector %v", idsOf(got), idsOf(want))
	}
	got, err = s.Search(ctx, alias, Query{Mode: ModeHybrid, Text: query, EmbedText: true, Alpha: 0.5, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	want, err = s.Search(ctx, alias, Query{Mode: ModeHybrid, Text: query, Vector: unitVector(query, dims), Alpha: 0.5, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if calls := rec.take(); len(calls) != 1 || calls[0].Task != "query" {
		t.Fatalf("hybrid with text only called %+v, want one query call", calls)
	}
	if !sameIDs(got, want) {
		t.Fatalf("hybrid embedded by Weaviate %v differs from hybrid with the vector %v", idsOf(got), idsOf(want))
	}
	for _, bad := range []Query{
		{Mode: ModeBM25, Text: query, EmbedText: true, Limit: 1},
		{Mode: ModeDense, Text: query, Vector: unitVector(query, dims), EmbedText: true, Limit: 1},
		{Mode: ModeDense, EmbedText: true, Limit: 1},
	} {
		if _, err := s.Search(ctx, alias, bad); err == nil {
			t.Errorf("query %+v accepted", bad)
		}
	}
	if err := s.DeleteAlias(ctx, alias); err != nil {
		t.Fatal(err)
	}

	// The shared server runs without the module.
	plain := storeFor(t, sharedServer(t), Config{})
	err = plain.EnsureCollection(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), ModuleTransformers) {
		t.Fatalf("a server without %s accepted the collection: %v", ModuleTransformers, err)
	}
	t.Logf("without the module: %v", err)
	bad := spec
	bad.Vectorizer.QueryURL = ""
	if err := s.EnsureCollection(ctx, bad); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("a vectorizer with one URL: %v", err)
	}
}

func idsOf(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func sameIDs(a, b []Hit) bool {
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
