package evaluate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, small-to-big through the worker: an evaluate plan with expand Section, run as a
// persona, on a real Weaviate. The public document's span is split over its chunks 0 and 1
// (one section); the query hits chunk 0. The result's expansion says span recall 0.5 with 4
// words, 1.0 with 8 expanded; the confidential document holding the same words is neither
// retrieved nor expanded into (0 unreadable chunks).
func TestEvaluatePlanMeasuresTheExpansionAsAPersona(t *testing.T) {
	wv := weaviatetest.Start(t)
	ctx := t.Context()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	const coll = "RagChunks_t_evalexpand_r1"
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: 3}); err != nil {
		t.Fatal(err)
	}
	texts := []string{"Windturbines op zee draaien. ", "De raad steunt dat. ", "Zon volgt later pas. "}
	headings := [][]string{{"Wind"}, {"Wind"}, {"Zon"}}
	docs := map[string][]string{"open": {ragopsv1alpha1.PublicGroup}, "dicht": {"juridisch"}}
	var chunks []vectorstore.Chunk
	for doc, groups := range docs {
		off := 0
		for o, text := range texts {
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: off, End: off + len(text), Text: text,
				HeadingPath: headings[o], Vector: []float32{1, float32(o), 0}, DocHash: "h", AccessGroups: groups, AccessKey: "k"})
			off += len(text)
		}
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	split := len(texts[0])
	write := func(name string, lines ...any) {
		var b strings.Builder
		for _, l := range lines {
			raw, _ := json.Marshal(l)
			b.Write(append(raw, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := strings.Join(texts, "")
	write(beir.CorpusFile, map[string]string{"_id": "open", "title": "", "text": doc}, map[string]string{"_id": "dicht", "title": "", "text": doc})
	write(beir.QueriesFile, map[string]string{"_id": "q1", "text": "windturbines"})
	write(beir.QuerySpansFile, map[string]any{"query-id": "q1", "corpus-id": "open", "byte_spans": [][2]int{{split - 8, split + 8}}})
	if err := os.MkdirAll(filepath.Join(dir, beir.QrelsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, beir.QrelsDir, "test.tsv"), []byte("q1\topen\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := plan.Evaluate{Version: plan.Version, Namespace: "ns", Evaluation: "small-to-big", UID: "u-1", Revision: "r1",
		Collection: coll, Dataset: plan.Source{Dir: dir}, Split: "test", Mode: ragopsv1alpha1.ModeBM25, K: []int{10},
		Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
		As:       []string{"raad"}, Expand: &plan.Expand{Mode: ragopsv1alpha1.ExpandSection, Size: 8, K: 10}}
	res, _ := runPlan(t, p)
	x := res.Expansion
	if x == nil || x.Expand != *p.Expand || x.SpanRecall == nil || *x.SpanRecall != 0.5 || x.ExpandedSpanRecall == nil || *x.ExpandedSpanRecall != 1 ||
		x.TokensReturned != 4 || x.ExpandedTokensReturned != 8 {
		t.Errorf("expansion %+v, want span recall 0.5 -> 1 and 4 -> 8 words", x)
	}
	if res.UnreadableChunks == nil || *res.UnreadableChunks != 0 {
		t.Errorf("unreadable chunks %v, want 0", res.UnreadableChunks)
	}
	// The same plan as juridisch reads both documents: the confidential one is its to read.
	p.As = []string{"juridisch"}
	if res, _ := runPlan(t, p); res.Expansion == nil || res.Expansion.ExpandedTokensReturned != 16 {
		t.Errorf("as juridisch: expansion %+v, want 16 words (both documents' sections)", res.Expansion)
	}
}
