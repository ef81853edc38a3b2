package evaluator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/evaluator/internal/datasets"
	"github.com/ragops/ragops/evaluator/metrics"
)

var (
	sciOnce  sync.Once
	sciDS    *beir.Dataset
	sciIndex *memIndex
)

func sciFact(t *testing.T) (*beir.Dataset, *memIndex) {
	t.Helper()
	dir := datasets.Dir(t, "scifact")
	sciOnce.Do(func() {
		ds, err := beir.Load(os.DirFS(dir), beir.Options{Split: "test"})
		if err != nil {
			panic(err)
		}
		sciDS, sciIndex = ds, newMemIndex(ds.Corpus, 48)
	})
	return sciDS, sciIndex
}

func TestRetrieveDocumentsGrowsUntilKDocuments(t *testing.T) {
	ds, ix := sciFact(t)
	if len(ix.chunks) <= len(ds.Corpus) {
		t.Fatalf("%d chunks for %d documents: the fixture must split documents", len(ix.chunks), len(ds.Corpus))
	}
	ctx := context.Background()
	grew := 0
	for _, bq := range ds.Queries[:40] {
		q := Query{ID: bq.ID, Text: bq.Text, Mode: BM25}
		got, err := RetrieveDocuments(ctx, ix, q, 20, Growth{Initial: 8})
		if err != nil {
			t.Fatal(err)
		}
		if got.Searches > 1 {
			grew++
		}
		if len(got.Docs) != 20 && !got.Short {
			t.Fatalf("query %s: %d documents, not short", bq.ID, len(got.Docs))
		}
		// Exactness: the top 20 documents by best chunk over the whole index.
		all, _ := ix.Search(ctx, q, len(ix.chunks))
		want := Aggregate(all)
		for i, d := range got.Docs {
			if d.DocID != want[i].DocID || d.Score != want[i].Score {
				t.Fatalf("query %s rank %d: %s %.4f, whole-index ranking has %s %.4f", bq.ID, i+1, d.DocID, d.Score, want[i].DocID, want[i].Score)
			}
			if d.Best.DocID != d.DocID || d.Best.Score != d.Score {
				t.Fatalf("best chunk %+v does not belong to %s", d.Best, d.DocID)
			}
		}
	}
	if grew == 0 {
		t.Fatal("no query needed a second search: the growth path is untested")
	}
	// A query matching a handful of chunks only: short, with all of them.
	got, err := RetrieveDocuments(ctx, ix, Query{ID: "rare", Text: "microstructural", Mode: BM25}, 50, Growth{Initial: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Short || len(got.Docs) == 0 || len(got.Docs) >= 50 || len(got.Chunks) >= got.Limit {
		t.Fatalf("rare query: short %v, %d docs, %d chunks, limit %d", got.Short, len(got.Docs), len(got.Chunks), got.Limit)
	}
}

func TestAggregateBestChunkAndTies(t *testing.T) {
	hits := []ChunkHit{{DocID: "a", Ordinal: 3, Score: 0.9}, {DocID: "b", Score: 0.9}, {DocID: "a", Ordinal: 1, Score: 0.95}, {DocID: "c", Score: 0.1}}
	docs := Aggregate(hits)
	got := []string{}
	for _, d := range docs {
		got = append(got, fmt.Sprintf("%s:%v:%d", d.DocID, d.Score, d.Best.Ordinal))
	}
	if s := strings.Join(got, " "); s != "a:0.95:1 b:0.9:0 c:0.1:0" {
		t.Fatalf("got %s", s)
	}
	if d := Aggregate([]ChunkHit{{DocID: "a", Score: 1}, {DocID: "b", Score: 1}}); d[0].DocID != "b" {
		t.Fatalf("tie: %v; want b first (trec_eval: document ID descending)", d)
	}
}

// overlapReranker scores a passage by the share of query tokens it holds: a real, if
// simple, relevance signal, so that the plumbing is tested with scores that change order.
type overlapReranker struct{ calls, passages int }

func (r *overlapReranker) Score(ctx context.Context, query string, passages []string) ([]float64, error) {
	r.calls++
	r.passages += len(passages)
	q := map[string]bool{}
	for _, t := range memTokens(query) {
		q[t] = true
	}
	out := make([]float64, len(passages))
	for i, p := range passages {
		seen := map[string]bool{}
		for _, t := range memTokens(p) {
			if q[t] && !seen[t] {
				seen[t] = true
				out[i]++
			}
		}
		out[i] /= float64(len(q))
	}
	return out, nil
}

type badReranker struct{ scores []float64 }

func (b badReranker) Score(context.Context, string, []string) ([]float64, error) {
	return b.scores, nil
}

func TestRerankOrdering(t *testing.T) {
	ds, ix := sciFact(t)
	ctx := context.Background()
	bq := ds.Queries[3]
	q := Query{ID: bq.ID, Text: bq.Text, Mode: BM25}
	ret, err := RetrieveDocuments(ctx, ix, q, 10, Growth{})
	if err != nil {
		t.Fatal(err)
	}
	rr := &overlapReranker{}
	chunks, n, err := Rerank(ctx, rr, q, ret.Chunks, 20, func(h ChunkHit) (string, error) { return h.Text, nil })
	if err != nil {
		t.Fatal(err)
	}
	if n != 20 || rr.calls != 1 || rr.passages != 20 || len(chunks) != len(ret.Chunks) {
		t.Fatalf("reranked %d, calls %d, passages %d, chunks %d of %d", n, rr.calls, rr.passages, len(chunks), len(ret.Chunks))
	}
	want, _ := rr.Score(ctx, q.Text, []string{})
	_ = want
	moved := false
	for i := 0; i < n; i++ {
		s, _ := rr.Score(ctx, q.Text, []string{chunks[i].Text})
		if chunks[i].Score != s[0] {
			t.Fatalf("chunk %d carries %v, reranker says %v", i, chunks[i].Score, s[0])
		}
		if i > 0 && chunks[i].Score > chunks[i-1].Score {
			t.Fatalf("reranked chunks not in descending score at %d", i)
		}
		if chunks[i].DocID != ret.Chunks[i].DocID || chunks[i].Ordinal != ret.Chunks[i].Ordinal {
			moved = true
		}
	}
	if !moved {
		t.Fatal("reranking changed no position: the test query does not exercise ordering")
	}
	for i := n; i < len(chunks); i++ {
		if chunks[i] != ret.Chunks[i] {
			t.Fatalf("tail chunk %d changed", i)
		}
	}
	docs := AggregateReranked(chunks, n)
	headDocs := Aggregate(chunks[:n])
	for i, d := range docs {
		if i < len(headDocs) && d != headDocs[i] {
			t.Fatalf("doc %d: %+v, want the reranked head's %+v", i, d, headDocs[i])
		}
		if i > 0 && !(d.Score < docs[i-1].Score || d.Score == docs[i-1].Score && d.DocID < docs[i-1].DocID) {
			t.Fatalf("doc scores do not sort as ranked at %d: %v then %v", i, docs[i-1].Score, d.Score)
		}
	}
	if len(docs) != len(Aggregate(ret.Chunks)) {
		t.Fatalf("reranking changed the document set: %d vs %d", len(docs), len(Aggregate(ret.Chunks)))
	}
	text := func(h ChunkHit) (string, error) { return h.Text, nil }
	if _, _, err := Rerank(ctx, badReranker{[]float64{1}}, q, ret.Chunks, 3, text); err == nil || !strings.Contains(err.Error(), "returned 1 scores for 3 passages") {
		t.Fatalf("short scores: %v", err)
	}
	if _, _, err := Rerank(ctx, badReranker{[]float64{1, math.NaN()}}, q, ret.Chunks, 2, text); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("NaN: %v", err)
	}
}

func readRunFile(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scored := map[string][]metrics.Scored{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) != 6 || p[1] != "Q0" {
			t.Fatalf("run line %q", sc.Text())
		}
		s, err := strconv.ParseFloat(p[4], 64)
		if err != nil {
			t.Fatal(err)
		}
		scored[p[0]] = append(scored[p[0]], metrics.Scored{DocID: p[2], Score: s})
	}
	run := map[string][]string{}
	for q, d := range scored {
		run[q] = metrics.Rank(d)
	}
	return run
}

func TestRunSciFactBM25(t *testing.T) {
	ds, ix := sciFact(t)
	out := t.TempDir()
	dir := datasets.Dir(t, "scifact")
	var plain Summary
	for _, rerank := range []bool{false, true} {
		cfg := Config{Dataset: DatasetSource{Name: "scifact", Dir: dir}, Mode: BM25, Retriever: ix, Cutoffs: []int{1, 5, 100}, OutDir: out}
		if rerank {
			cfg.Reranker, cfg.RerankTopN = &overlapReranker{}, 30
		}
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Queries != len(ds.Queries) || sum.FailedQueries != 0 || sum.Judgements != 339 {
			t.Fatalf("summary %+v", sum)
		}
		for _, m := range metrics.Measures {
			if _, ok := sum.Metrics[metrics.Name(m, 10)]; !ok {
				t.Fatalf("summary lacks %s@10", m)
			}
		}
		// Published BM25 nDCG@10 on SciFact is 0.665-0.679 over whole documents with titles;
		// 48-word chunks of the abstract alone, best chunk per document, land near it.
		ndcg := sum.Metrics["ndcg@10"]
		t.Logf("rerank=%v: ndcg@10 %.4f recall@10 %.4f recall@100 %.4f mrr@10 %.4f", rerank, ndcg, sum.Metrics["recall@10"], sum.Metrics["recall@100"], sum.Metrics["mrr@10"])
		if !rerank {
			plain = sum
			if ndcg < 0.5 || ndcg > 0.75 {
				t.Fatalf("ndcg@10 %.4f outside the plausible BM25 range", ndcg)
			}
		} else {
			// Reranking reorders within the retrieved documents: recall@100 stays, the top changes.
			if sum.Metrics["recall@100"] != plain.Metrics["recall@100"] || sum.Metrics["ndcg@10"] == plain.Metrics["ndcg@10"] {
				t.Fatalf("reranked %v, plain %v", sum.Metrics, plain.Metrics)
			}
		}
		if !(sum.Metrics["recall@1"] <= sum.Metrics["recall@5"] && sum.Metrics["recall@5"] <= sum.Metrics["recall@10"] && sum.Metrics["recall@10"] <= sum.Metrics["recall@100"]) {
			t.Fatalf("recall not monotone in k: %v", sum.Metrics)
		}
		// The run file alone reproduces the summary (trec_eval would read the same ranking).
		res, err := metrics.Evaluate(readRunFile(t, filepath.Join(out, RunFile)), ds.Qrels, sum.Cutoffs)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range res.Mean {
			if Round4(v) != sum.Metrics[name] {
				t.Fatalf("%s from the run file %.4f, summary %.4f", name, v, sum.Metrics[name])
			}
		}
		b, err := os.ReadFile(filepath.Join(out, SummaryFile))
		if err != nil || len(b) > MaxSummaryBytes {
			t.Fatalf("summary file: %d bytes, %v", len(b), err)
		}
		var back Summary
		if err := json.Unmarshal(b, &back); err != nil || back.Metrics["ndcg@10"] != ndcg {
			t.Fatalf("summary file does not round-trip: %v", err)
		}
		f, err := os.ReadFile(filepath.Join(out, QueriesFile))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(f)), "\n")
		if len(lines) != sum.Queries {
			t.Fatalf("%d per-query lines, %d queries", len(lines), sum.Queries)
		}
		var rec QueryRecord
		if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || len(rec.Values) != len(res.Names) || rec.Docs == 0 {
			t.Fatalf("per-query record %s: %v", lines[0], err)
		}
		if rerank && rec.Reranked != 30 {
			t.Fatalf("reranked %d chunks, want 30", rec.Reranked)
		}
	}
}

func TestRunQMSumSpans(t *testing.T) {
	dir := datasets.Dir(t, "qmsum")
	ds, err := beir.Load(os.DirFS(dir), beir.Options{Split: "val"})
	if err != nil {
		t.Fatal(err)
	}
	ix := newMemIndex(ds.Corpus, 200)
	sum, err := Run(context.Background(), Config{Dataset: DatasetSource{Name: "qmsum", Dir: dir}, Split: "val", Mode: BM25, Retriever: ix, Cutoffs: []int{1, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.SpanQueries != sum.Queries || sum.SpanQueries == 0 {
		t.Fatalf("%d span queries of %d", sum.SpanQueries, sum.Queries)
	}
	t.Logf("QMSum val, BM25 over 200-word chunks: ndcg@10 %.4f recall@10 %.4f spanHit@1 %.4f spanHit@5 %.4f spanHit@10 %.4f",
		sum.Metrics["ndcg@10"], sum.Metrics["recall@10"], sum.Metrics["spanHit@1"], sum.Metrics["spanHit@5"], sum.Metrics["spanHit@10"])
	for _, k := range sum.Cutoffs {
		span, success := sum.Metrics[fmt.Sprintf("spanHit@%d", k)], sum.Metrics[fmt.Sprintf("success@%d", k)]
		// A chunk overlapping a relevant span puts its document in the top k documents.
		if span > success || span <= 0 {
			t.Fatalf("spanHit@%d %.4f, success@%d %.4f", k, span, k, success)
		}
	}
	if !(sum.Metrics["spanHit@1"] <= sum.Metrics["spanHit@5"] && sum.Metrics["spanHit@5"] <= sum.Metrics["spanHit@10"]) {
		t.Fatal("spanHit not monotone in k")
	}
	// A chunk touching the span's edge only: [s-10, s) misses, [s-10, s+1) hits.
	qs := ds.Spans[ds.Queries[0].ID]
	s := qs[0].Spans[0].Start
	if SpanHitAt([]ChunkHit{{DocID: qs[0].DocID, Start: s - 10, End: s}}, qs, 10) {
		t.Fatal("adjacent chunk counted as overlapping")
	}
	if !SpanHitAt([]ChunkHit{{DocID: qs[0].DocID, Start: s - 10, End: s + 1}}, qs, 10) {
		t.Fatal("overlapping chunk not counted")
	}
	if SpanHitAt([]ChunkHit{{DocID: "other", Start: s, End: s + 100}}, qs, 10) {
		t.Fatal("chunk of another document counted")
	}
}

// failingRetriever fails for some queries; the rest go to the index.
type failingRetriever struct {
	*memIndex
	fail map[string]bool
}

func (f failingRetriever) Search(ctx context.Context, q Query, limit int) ([]ChunkHit, error) {
	if f.fail[q.ID] {
		return nil, errors.New("connection refused")
	}
	return f.memIndex.Search(ctx, q, limit)
}

func TestRunCountsFailedQueries(t *testing.T) {
	ds, ix := sciFact(t)
	fail := map[string]bool{ds.Queries[0].ID: true, ds.Queries[7].ID: true}
	sum, err := Run(context.Background(), Config{Dataset: DatasetSource{Dir: datasets.Dir(t, "scifact")}, Mode: BM25, Retriever: failingRetriever{ix, fail}, MaxQueries: 20})
	if !errors.Is(err, ErrQueriesFailed) || !strings.Contains(err.Error(), "2 of 20") {
		t.Fatalf("error %v", err)
	}
	if sum.FailedQueries != 2 || sum.Queries != 20 || len(sum.Errors) != 2 || !strings.Contains(sum.Errors[0], "connection refused") {
		t.Fatalf("summary %+v", sum)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := datasets.Dir(t, "scifact")
	_, ix := sciFact(t)
	cases := map[string]Config{
		"no retrieval mode":     {Dataset: DatasetSource{Dir: dir}, Retriever: ix},
		`mode "sparse"`:         {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Mode: "sparse"},
		"needs a query encoder": {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Mode: Dense},
		"no retriever":          {Dataset: DatasetSource{Dir: dir}, Mode: BM25},
		"want exactly one":      {Dataset: DatasetSource{Dir: dir, URL: "http://x"}, Retriever: ix, Mode: BM25},
		"k=0":                   {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Mode: BM25, Cutoffs: []int{0}},
		"qrels/nope.tsv":        {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Mode: BM25, Split: "nope"},
		"hybrid alpha 1.5":      {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Encoder: nilEncoder{}, Mode: Hybrid, Alpha: 1.5},
		`fusion "rrf", want RankedFusion or RelativeScoreFusion`: {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Encoder: nilEncoder{}, Mode: Hybrid, Alpha: 0.5, Fusion: "rrf"},
		"embedded one way, not both":                             {Dataset: DatasetSource{Dir: dir}, Retriever: ix, Encoder: nilEncoder{}, EmbedByRetriever: true, Mode: Dense},
	}
	for want, cfg := range cases {
		if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v", want, err)
		}
	}
}

type nilEncoder struct{}

func (nilEncoder) EncodeQuery(context.Context, string) ([]float32, error) { return nil, nil }

func TestSummaryStaysUnder4KB(t *testing.T) {
	var ks []int
	for k := 1; k <= 60; k++ {
		ks = append(ks, k)
	}
	cutoffs, _ := metrics.Cutoffs(ks)
	alpha := 0.5
	sum := Summary{Dataset: "a-data-set-with-a-long-name", Split: "test", Mode: Hybrid, Alpha: &alpha, Fusion: RelativeScoreFusion,
		Cutoffs: cutoffs, Queries: 12345, Metrics: map[string]float64{}, FailedQueries: 3, ShortQueries: 99, Judgements: 100000,
		Dropped: beir.Dropped{UnknownQueries: 12, UnknownDocuments: 3456}, SpanQueries: 10}
	for i := 0; i < beir.MaxDroppedExamples; i++ {
		sum.Dropped.Examples = append(sum.Dropped.Examples, strings.Repeat("qrels/test.tsv:123456: document \"x\" not in corpus.jsonl ", 3))
	}
	for i := 0; i < 3; i++ {
		sum.Errors = append(sum.Errors, truncate(strings.Repeat("evaluator: query \"q\": search: connection refused ", 10), 200))
	}
	for _, k := range cutoffs {
		for _, m := range metrics.Measures {
			sum.Metrics[metrics.Name(m, k)] = Round4(1.0 / 3)
		}
		sum.Metrics[fmt.Sprintf("spanHit@%d", k)] = Round4(2.0 / 3)
	}
	full, _ := json.Marshal(sum)
	if len(full) <= MaxSummaryBytes {
		t.Fatalf("fixture is only %d bytes; it must exceed the limit to test truncation", len(full))
	}
	b, err := sum.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxSummaryBytes {
		t.Fatalf("%d bytes", len(b))
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Truncated || back.Dropped.UnknownDocuments != 3456 || back.FailedQueries != 3 {
		t.Fatalf("truncated summary lost counts: %s", b)
	}
	for _, m := range metrics.Measures {
		if back.Metrics[metrics.Name(m, 10)] != 0.3333 {
			t.Fatalf("@10 metric %s missing or not rounded: %s", m, b)
		}
	}
	if _, ok := back.Metrics["ndcg@1"]; !ok {
		t.Fatalf("smallest cut-offs should stay while they fit: %s", b)
	}
	// A summary within the limit is left whole.
	small := Summary{Split: "test", Mode: BM25, Cutoffs: []int{10}, Metrics: map[string]float64{"ndcg@10": 0.5}}
	b, _ = small.Marshal()
	if strings.Contains(string(b), "truncated") {
		t.Fatalf("small summary marked truncated: %s", b)
	}
}

// textRetriever records the queries it gets and answers from the index by their text.
type textRetriever struct {
	*memIndex
	mu   sync.Mutex
	seen []Query
}

func (r *textRetriever) Search(ctx context.Context, q Query, limit int) ([]ChunkHit, error) {
	r.mu.Lock()
	r.seen = append(r.seen, q)
	r.mu.Unlock()
	return r.memIndex.Search(ctx, Query{ID: q.ID, Text: q.Text, Mode: BM25}, limit)
}

// With EmbedByRetriever no encoder is needed: every Dense and Hybrid query reaches the
// retriever as text with EmbedText set and no vector (the retriever embeds it).
func TestEmbedByRetrieverSendsText(t *testing.T) {
	dir := datasets.Dir(t, "scifact")
	_, ix := sciFact(t)
	for _, mode := range []Mode{Dense, Hybrid} {
		r := &textRetriever{memIndex: ix}
		sum, err := Run(context.Background(), Config{Dataset: DatasetSource{Dir: dir}, Mode: mode, Alpha: 0.5, Retriever: r, EmbedByRetriever: true, MaxQueries: 20})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if sum.Queries != 20 || len(r.seen) < 20 {
			t.Fatalf("%s: %d queries evaluated, %d searches; want 20, at least 20", mode, sum.Queries, len(r.seen))
		}
		for _, q := range r.seen {
			if !q.EmbedText || q.Vector != nil || q.Text == "" || q.Mode != mode {
				t.Errorf("%s: the retriever got %+v, want the text with EmbedText and no vector", mode, q)
			}
		}
	}
}
