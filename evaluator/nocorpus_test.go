package evaluator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/evaluator/internal/datasets"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 56, "Evaluations load the corpus": an Evaluation needs only queries and judgements.
// SciFact's chunks are indexed in a real Weaviate together with one document SciFact does not
// list; then (1) a copy of SciFact without corpus.jsonl evaluates dense, with recall@10 equal
// to the recall counted here from the same searches, and (2) the query whose best hit is the
// unlisted document is evaluated (that hit is retrieved and not relevant), not failed.
func TestRunWithoutCorpusDenseWeaviate(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes SciFact in Weaviate")
	}
	srv := weaviatetest.Start(t)
	ds, ix := sciFact(t)
	ctx := context.Background()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: srv.HTTPAddr, GRPCHost: srv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	enc := hashEncoder{dims: 128}
	coll, err := vectorstore.CollectionName("default", "nocorpus", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: enc.dims,
		Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat}}); err != nil {
		t.Fatal(err)
	}
	// The unlisted document holds the text of the first query, so it is that query's best hit.
	const unlisted = "not-in-scifact"
	first := ds.Queries[0]
	chunks := []vectorstore.Chunk{{DocID: unlisted, Ordinal: 0, Start: 0, End: len(first.Text), Text: first.Text, Vector: enc.vector(first.Text)}}
	for i, c := range ix.chunks {
		chunks = append(chunks, vectorstore.Chunk{DocID: c.DocID, Ordinal: c.Ordinal, Start: c.Start, End: c.End, Text: ix.text[i], Vector: enc.vector(ix.text[i])})
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	ret := StoreRetriever{Store: store, Target: coll}

	// SciFact without corpus.jsonl: queries and judgements only.
	full := datasets.Dir(t, "scifact")
	bare := t.TempDir()
	for _, name := range []string{beir.QueriesFile, filepath.Join(beir.QrelsDir, "test.tsv")} {
		b, err := os.ReadFile(filepath.Join(full, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(bare, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bare, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	const n = 60
	// Recall@10 counted here from the same searches: relevant documents among the top 10
	// by best chunk over the relevant documents judged.
	var want float64
	hitUnlisted := false
	for _, bq := range ds.Queries[:n] {
		got, err := RetrieveDocuments(ctx, ret, Query{ID: bq.ID, Text: bq.Text, Vector: enc.vector(bq.Text), Mode: Dense}, 10, Growth{})
		if err != nil {
			t.Fatal(err)
		}
		relevant, found := 0, 0
		for _, s := range ds.Qrels[bq.ID] {
			if s > 0 {
				relevant++
			}
		}
		for _, d := range got.Docs {
			if ds.Qrels[bq.ID][d.DocID] > 0 {
				found++
			}
			if d.DocID == unlisted {
				hitUnlisted = true
			}
		}
		want += float64(found) / float64(relevant)
	}
	want /= n
	if !hitUnlisted {
		t.Fatal("no query retrieved the unlisted document: the test does not cover it")
	}

	for _, c := range []struct{ name, dir string }{{"without corpus.jsonl", bare}, {"with corpus.jsonl", full}} {
		name, out := c.name, t.TempDir()
		sum, err := Run(ctx, Config{Dataset: DatasetSource{Name: "scifact", Dir: c.dir}, Mode: Dense, Encoder: enc,
			Retriever: ret, MaxQueries: n, OutDir: out})
		if sum.Queries != n || sum.FailedQueries != 0 || err != nil {
			t.Errorf("%s: %d queries, %d failed (%v): %v", name, sum.Queries, sum.FailedQueries, sum.Errors, err)
			continue
		}
		if got := sum.Metrics[metrics.Name(metrics.Recall, 10)]; got != Round4(want) {
			t.Fatalf("%s: recall@10 %.4f, counted from the same searches %.4f", name, got, Round4(want))
		}
		run, err := os.ReadFile(filepath.Join(out, RunFile))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains("\n"+string(run), "\n"+first.ID+" Q0 "+unlisted+" 1 ") {
			t.Fatalf("%s: run file does not rank %s first for query %s", name, unlisted, first.ID)
		}
		t.Logf("%s: dense recall@10 %.4f over %d queries, %s retrieved first for query %s", name, sum.Metrics["recall@10"], n, unlisted, first.ID)
	}
}
