package evaluate_test

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/evaluate"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// sciFactQueries is the size of SciFact's test split; indexedDocs documents (SciFactIndex:
// the relevant documents of the queries in order, topped up with the corpus' first ones)
// hold every relevant document of all of them.
const (
	sciFactQueries = 300
	indexedDocs    = 600
)

// The evaluate worker with spec.queryEmbedding Weaviate sends query text through the
// revision's collection, whose text2vec-transformers vectorizer is a real model server
// (ragops serve), and ranks exactly what the Job path ranks with the model folder loaded in
// the Job: for all 300 SciFact test queries, Dense (nearText) and Hybrid (a text query,
// alpha 0.5), all-MiniLM-L6-v2 and e5-small-v2 (whose "query: " prefix only the server
// applies on this path), the top-10 document IDs are equal query by query and so are the
// metrics. The model server embeds one query per search on the Weaviate path and none on
// the Job path.
func TestQueryEmbeddingWeaviateRanksAsTheJob(t *testing.T) {
	dirs := map[string]string{
		"all-MiniLM-L6-v2": servingtest.ModelDir(t, servingtest.EnvMiniLM),
		"e5-small-v2":      servingtest.ModelDir(t, servingtest.EnvE5),
	}
	dataset := servingtest.SciFactDir(t)
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"all-MiniLM-L6-v2", "e5-small-v2"} {
		t.Run(name, func(t *testing.T) {
			srv := servingtest.Start(t, dirs[name], serving.Options{})
			idx := servingtest.SciFactIndex(t, store, srv, "evalq", "scifact"+string(rune('a'+i)), "r1", indexedDocs)
			if len(idx.Queries) != sciFactQueries {
				t.Fatalf("%d documents hold every relevant document of %d queries, want all %d", len(idx.Docs), len(idx.Queries), sciFactQueries)
			}
			for _, mode := range []ragopsv1alpha1.RetrievalMode{ragopsv1alpha1.ModeDense, ragopsv1alpha1.ModeHybrid} {
				t.Run(string(mode), func(t *testing.T) {
					p := plan.Evaluate{Version: plan.Version, Namespace: "evalq", Evaluation: "served", UID: "u-1", Revision: "r1",
						Collection: idx.Collection, Dataset: plan.Source{Dir: dataset}, Split: "test", Mode: mode, K: []int{10},
						Embedder: ragopsv1alpha1.EmbedderSpec{Threads: 1},
						Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}}
					if mode == ragopsv1alpha1.ModeHybrid {
						p.Alpha, p.Fusion = 0.5, ragopsv1alpha1.FusionRelativeScore
					}
					byJob, byWeaviate := p, p
					byJob.ModelDir = dirs[name]
					byWeaviate.QueryEmbedding = ragopsv1alpha1.QueryEmbeddingWeaviate

					before := queriesServed(t, srv.Registry())
					jobRes, jobRun := runPlan(t, byJob)
					if n := queriesServed(t, srv.Registry()) - before; n != 0 {
						t.Errorf("the Job path sent %v queries to the model server, want 0", n)
					}
					before = queriesServed(t, srv.Registry())
					wvRes, wvRun := runPlan(t, byWeaviate)
					if n := queriesServed(t, srv.Registry()) - before; n != sciFactQueries {
						t.Errorf("the Weaviate path had the model server embed %v queries, want %d (one search each)", n, sciFactQueries)
					}

					if jobRes.Queries != sciFactQueries || wvRes.Queries != sciFactQueries {
						t.Fatalf("evaluated %d (Job) and %d (Weaviate) queries, want %d", jobRes.Queries, wvRes.Queries, sciFactQueries)
					}
					same := 0
					for q, want := range jobRun {
						got := wvRun[q]
						if len(want) != 10 || !slices.Equal(got, want) {
							t.Errorf("query %s: top 10 by Weaviate %v, by the Job %v", q, got, want)
							continue
						}
						same++
					}
					jm, wm := jobRes.Metrics[0], wvRes.Metrics[0]
					t.Logf("%s %s: %d docs; top-10 equal for %d of %d queries; recall@10 %.4f (Job) %.4f (Weaviate), nDCG@10 %.4f %.4f",
						name, mode, len(idx.Docs), same, len(jobRun), jm.Recall, wm.Recall, jm.NDCG, wm.NDCG)
					if len(jobRun) != sciFactQueries || len(wvRun) != sciFactQueries {
						t.Errorf("run files hold %d (Job) and %d (Weaviate) queries, want %d", len(jobRun), len(wvRun), sciFactQueries)
					}
					if jm.Recall != wm.Recall || jm.NDCG != wm.NDCG || jm.MRR != wm.MRR {
						t.Errorf("metrics@10 Job %+v, Weaviate %+v", jm, wm)
					}
					if jm.Recall < 0.5 {
						t.Errorf("recall@10 %.4f with every relevant document among %d: the vectors are not the model's", jm.Recall, len(idx.Docs))
					}
				})
			}
		})
	}
}

// runPlan runs the evaluate worker on p and returns its result and its run file's ranked
// document IDs by query.
func runPlan(t *testing.T, p plan.Evaluate) (plan.EvaluateResult, map[string][]string) {
	t.Helper()
	out := t.TempDir()
	res, err := evaluate.Run(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, evaluate.Options{OutDir: out})
	if err != nil {
		t.Fatalf("queryEmbedding %q: %v", p.QueryEmbedding, err)
	}
	f, err := os.Open(filepath.Join(out, evaluator.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text()) // query Q0 doc rank score tag, in rank order
		if len(fields) != 6 {
			t.Fatalf("run line %q", sc.Text())
		}
		run[fields[0]] = append(run[fields[0]], fields[2])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return res, run
}

// queriesServed is the model server's ragops_serve_texts_total{task="query"}.
func queriesServed(t *testing.T, reg prometheus.Gatherer) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ragops_serve_texts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" && l.GetValue() == "query" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0 // no query served yet: the series appears with the first
}

// On a collection built without a vectorizer (Weaviate without text2vec-transformers, or
// serving disabled) the worker with queryEmbedding Weaviate fails before any query, naming
// the collection and what to set, instead of failing every nearText.
func TestQueryEmbeddingWeaviateRefusesACollectionWithoutAVectorizer(t *testing.T) {
	wv := weaviatetest.Start(t)
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	name, err := vectorstore.CollectionName("evalq", "plain", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureCollection(t.Context(), vectorstore.CollectionSpec{Name: name, Revision: "r1", Dimensions: 4}); err != nil {
		t.Fatal(err)
	}
	p := plan.Evaluate{Version: plan.Version, Namespace: "evalq", Evaluation: "served", Revision: "r1", Collection: name,
		Dataset: plan.Source{Dir: t.TempDir()}, Split: "test", Mode: ragopsv1alpha1.ModeDense, K: []int{10},
		QueryEmbedding: ragopsv1alpha1.QueryEmbeddingWeaviate,
		Weaviate:       plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}}
	_, err = evaluate.Run(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, evaluate.Options{OutDir: t.TempDir()})
	if err == nil {
		t.Fatal("evaluated through a collection without a vectorizer")
	}
	for _, want := range []string{name, "no text2vec-transformers vectorizer", "ENABLE_MODULES=text2vec-transformers", "spec.queryEmbedding: Job"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
