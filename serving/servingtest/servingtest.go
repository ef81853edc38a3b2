// Package servingtest runs a warmed-up model server (package serving) on loopback for tests
// in other packages, with the model folders the embedder tests use: RAGOPS_MODEL_DIR
// (all-MiniLM-L6-v2, hack/prepare.d/embedder.sh) and RAGOPS_E5_SMALL_DIR (e5-small-v2,
// hack/prepare.d/models.sh), and the ONNX Runtime library RAGOPS_ONNXRUNTIME_LIB. A missing
// one skips the test, or fails it under RAGOPS_REQUIRE_ALL=1.
package servingtest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/evaluator/beir"
	readerbeir "github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Environment variables of the model folders.
const (
	EnvMiniLM = "RAGOPS_MODEL_DIR"
	EnvE5     = "RAGOPS_E5_SMALL_DIR"
)

// ModelDir returns the folder named by env (EnvMiniLM, EnvE5) once the ONNX Runtime library
// is set too; it skips the test when either is unset (fails it under RAGOPS_REQUIRE_ALL=1).
func ModelDir(t testing.TB, env string) string {
	t.Helper()
	need(t, ort.EnvLibrary)
	return need(t, env)
}

func need(t testing.TB, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		msg := env + " is not set: run hack/prepare.d/embedder.sh and hack/prepare.d/models.sh and export what they print"
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}

// Server is a running model server.
type Server struct {
	*serving.Server
	// URL is the base URL on 127.0.0.1 (Weaviate appends /vectors).
	URL string
	// Model is the loaded model the server embeds with.
	Model *embedder.Model
}

// Start loads dir with one ONNX Runtime thread and cost-planned runs (as serving.Run on the
// CPU), serves it with opts (ModelHash filled in from embedder.FolderHash) on a loopback port
// and waits for warm-up; it is stopped (drained) and the model closed when the test ends.
func Start(t testing.TB, dir string, opts serving.Options) *Server {
	t.Helper()
	m, err := embedder.Load(dir, embedder.Options{IntraOpThreads: 1, RunTokens: embedder.CPURunTokens})
	if err != nil {
		t.Fatal(err)
	}
	if opts.ModelHash == "" {
		if opts.ModelHash, err = embedder.FolderHash(dir); err != nil {
			m.Close()
			t.Fatal(err)
		}
	}
	s, err := serving.New(m, opts)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.Handler()}}
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		m.Close()
	})
	if err := s.Warmup(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &Server{Server: s, URL: hs.URL, Model: m}
}

// SciFactDir is the SciFact folder (BEIR layout): $RAGOPS_DATASETS/scifact, else
// ../shared/datasets/scifact beside the module root.
func SciFactDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv("RAGOPS_DATASETS")
	if base == "" {
		root, err := weaviatetest.FindModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		base = filepath.Join(root, "..", "shared", "datasets")
	}
	return filepath.Join(base, "scifact")
}

// SciFact is the SciFact test split from SciFactDir.
func SciFact(t testing.TB) *beir.Dataset {
	t.Helper()
	ds, err := beir.Load(os.DirFS(SciFactDir(t)), beir.Options{Split: "test", SkipSpans: true})
	if err != nil {
		t.Fatalf("%v (set RAGOPS_DATASETS to the datasets folder)", err)
	}
	return ds
}

// Index is a revision collection of real SciFact documents behind an alias, wired to a model
// server.
type Index struct {
	Alias, Collection string
	// Queries are the SciFact test queries whose relevant documents are all in the collection.
	Queries []beir.Query
	// Docs are the indexed documents (one chunk each: title, blank line, abstract).
	Docs []beir.Document
	// Qrels are SciFact's test judgements.
	Qrels beir.Qrels
}

// SciFactIndex writes about n SciFact documents into collection (ns, index, revision) with the
// text2vec-transformers vectorizer pointing at srv, each document one chunk whose vector is
// srv.Model's document embedding (EmbedTexts, as a naive build embeds a one-chunk document),
// and points the Index's alias at it. The documents are those relevant to the first test
// queries, topped up with the corpus' first documents.
func SciFactIndex(t testing.TB, store *vectorstore.Store, srv *Server, ns, index, revision string, n int) Index {
	t.Helper()
	ctx := t.Context()
	ds := SciFact(t)
	var docs []beir.Document
	seen := map[string]bool{}
	var queries []beir.Query
	for _, q := range ds.Queries {
		var rel []string
		for id := range ds.Qrels[q.ID] {
			if !seen[id] {
				rel = append(rel, id)
			}
		}
		if len(docs)+len(rel) > n/2 {
			break
		}
		for _, id := range rel {
			d, _ := ds.Doc(id)
			docs, seen[id] = append(docs, d), true
		}
		queries = append(queries, q)
	}
	for _, d := range ds.Corpus {
		if len(docs) >= n {
			break
		}
		if !seen[d.ID] {
			docs, seen[d.ID] = append(docs, d), true
		}
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		doc, _ := readerbeir.FromFields(d.Title, d.Text)
		texts[i] = doc.Text
	}
	vecs, err := srv.Model.EmbedTexts(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	name, err := vectorstore.CollectionName(ns, index, revision)
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Model.Config()
	spec := vectorstore.CollectionSpec{Name: name, Revision: revision, Dimensions: cfg.Dimension,
		Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat},
		Vectorizer: vectorstore.Transformers{PassageURL: specs.PassageURL(srv.URL), QueryURL: specs.QueryURL(srv.URL),
			Pooling: vectorstore.TransformersPooling(string(cfg.Pooling))}}
	if err := store.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	chunks := make([]vectorstore.Chunk, len(docs))
	for i, d := range docs {
		chunks[i] = vectorstore.Chunk{DocID: d.ID, Start: 0, End: len(texts[i]), Text: texts[i],
			HeadingPath: []string{d.Title}, Vector: vecs[i]}
	}
	if err := store.Upsert(ctx, name, chunks); err != nil {
		t.Fatal(err)
	}
	alias, err := vectorstore.AliasName(ns, index)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetAlias(ctx, alias, name); err != nil {
		t.Fatal(err)
	}
	return Index{Alias: alias, Collection: name, Queries: queries, Docs: docs, Qrels: ds.Qrels}
}

// Stack is a Weaviate with text2vec-transformers, a store on it, a model server and a SciFact
// revision collection wired to that server behind its alias.
type Stack struct {
	Weaviate *weaviatetest.Server
	Store    *vectorstore.Store
	Server   *Server
	Index    Index
}

// StartStack starts a Stack for one test: Weaviate with the module (weaviatetest.StartWith),
// the model folder dir served by Start, and SciFactIndex of about n documents for Index
// ns/index at revision r1.
func StartStack(t testing.TB, dir, ns, index string, n int) *Stack {
	t.Helper()
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	srv := Start(t, dir, serving.Options{})
	return &Stack{Weaviate: wv, Store: store, Server: srv, Index: SciFactIndex(t, store, srv, ns, index, "r1", n)}
}
