package evaluator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/query/expand"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, small-to-big measured: one document of four chunks in a real Weaviate, the
// relevant span split evenly across chunks 1 and 2 (10 bytes each), the query's only hit
// chunk 1. Unexpanded, the top chunk covers half the span (spanRecall 0.5) with 6 words;
// its section (chunks 1 and 2 share the heading Wind) covers all of it (1.0) with twice the
// words (12); its neighbours (0-2) cover all of it with 18.
func TestRunMeasuresExpandedSpanRecallAgainstTokens(t *testing.T) {
	srv := weaviatetest.Start(t)
	ctx := context.Background()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: srv.HTTPAddr, GRPCHost: srv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	const coll = "RagChunks_t_expand_r1"
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: 3}); err != nil {
		t.Fatal(err)
	}
	// Six words each; every chunk ends in a space so the chunks tile the document.
	texts := []string{"Inleiding over de nota en doel. ", "Windturbines op zee leveren veel stroom. ",
		"De raad steunt dat met subsidie. ", "Zonnepanelen op daken volgen pas later. "}
	headings := [][]string{{"Nota"}, {"Nota", "Wind"}, {"Nota", "Wind"}, {"Nota", "Zon"}}
	var chunks []vectorstore.Chunk
	off := 0
	for o, text := range texts {
		chunks = append(chunks, vectorstore.Chunk{DocID: "d1", Ordinal: o, Start: off, End: off + len(text), Text: text,
			HeadingPath: headings[o], Vector: []float32{1, float32(o), 0}, DocHash: "h"})
		off += len(text)
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(texts, "")
	split := chunks[1].End
	line := func(v any) string { b, _ := json.Marshal(v); return string(b) + "\n" }
	fsys := fstest.MapFS{
		beir.CorpusFile:             {Data: []byte(line(map[string]string{"_id": "d1", "title": "", "text": doc}))},
		beir.QueriesFile:            {Data: []byte(line(map[string]string{"_id": "q1", "text": "windturbines"}))},
		beir.QrelsDir + "/test.tsv": {Data: []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\n")},
		beir.QuerySpansFile:         {Data: []byte(line(map[string]any{"query-id": "q1", "corpus-id": "d1", "byte_spans": [][2]int{{split - 10, split + 10}}}))},
	}
	for _, c := range []struct {
		spec                   expand.Spec
		recall, expandedRecall float64
		tokens, expandedTokens float64
	}{
		{expand.Spec{Mode: expand.Section, Size: 8}, 0.5, 1, 6, 12},
		{expand.Spec{Mode: expand.Neighbours, Size: 1}, 0.5, 1, 6, 18},
		{expand.Spec{Mode: expand.Section, Size: 1}, 0.5, 0.5, 6, 6},
	} {
		r := StoreRetriever{Store: store, Target: coll, WithText: true, Expansion: c.spec}
		sum, err := Run(ctx, Config{Dataset: DatasetSource{Name: "split-span", FS: fsys}, Mode: BM25, Retriever: r, Expander: r})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"spanRecall@10": c.recall, "expandedSpanRecall@10": c.expandedRecall,
			"tokensReturned@10": c.tokens, "expandedTokensReturned@10": c.expandedTokens}
		for name, v := range want {
			if got, ok := sum.Metrics[name]; !ok || got != v {
				t.Errorf("%s: %s = %v (present %v), want %v", c.spec, name, got, ok, v)
			}
		}
		if sum.ExpandK != 10 || sum.Metrics["spanHit@10"] != 1 {
			t.Errorf("%s: expandK %d, spanHit@10 %v; want 10 and 1", c.spec, sum.ExpandK, sum.Metrics["spanHit@10"])
		}
	}
	// Without an expander none of the expansion metrics appear.
	sum, err := Run(ctx, Config{Dataset: DatasetSource{Name: "split-span", FS: fsys}, Mode: BM25, Retriever: StoreRetriever{Store: store, Target: coll}})
	if err != nil {
		t.Fatal(err)
	}
	for name := range sum.Metrics {
		if strings.Contains(strings.ToLower(name), "tokens") || strings.Contains(name, "Recall") {
			t.Errorf("unexpanded run reports %s", name)
		}
	}
}

// SpanRecall counts the bytes of each span inside the union of its document's chunks:
// overlapping chunks once, other documents' chunks never.
func TestSpanRecallCountsCoveredBytes(t *testing.T) {
	spans := []beir.QuerySpans{{DocID: "a", Spans: []beir.Span{{Start: 10, End: 30}, {Start: 50, End: 60}}}}
	for _, c := range []struct {
		chunks []ChunkHit
		want   float64
	}{
		{nil, 0},
		{[]ChunkHit{{DocID: "a", Start: 0, End: 20}}, 10.0 / 30},
		{[]ChunkHit{{DocID: "a", Start: 0, End: 20}, {DocID: "a", Start: 15, End: 25}}, 15.0 / 30},
		{[]ChunkHit{{DocID: "b", Start: 0, End: 100}}, 0},
		{[]ChunkHit{{DocID: "a", Start: 0, End: 40}, {DocID: "a", Start: 55, End: 70}}, 25.0 / 30},
		{[]ChunkHit{{DocID: "a", Start: 0, End: 100}}, 1},
	} {
		if got := SpanRecall(c.chunks, spans); fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", c.want) {
			t.Errorf("%v: %v, want %v", c.chunks, got, c.want)
		}
	}
}
