package evaluator

import (
	"context"
	"fmt"
	"math"
)

// Reranker scores passages against a query, as a cross-encoder does (Nogueira & Cho 2019,
// "Passage Re-ranking with BERT"): one relevance score per passage, higher is better, in
// the order given. An ONNX cross-encoder implementation belongs with the embedder.
type Reranker interface {
	Score(ctx context.Context, query string, passages []string) ([]float64, error)
}

// ChunkText returns the text of a chunk hit: hit.Text when set, else the bytes
// [Start, End) of its document in the data set's corpus.
type ChunkText func(hit ChunkHit) (string, error)

// Rerank reorders the first topN chunks (all when fewer) by reranker score, ties kept in
// retrieval order, and returns them followed by the remaining chunks in retrieval order,
// with the reranked count. The reranked chunks carry the reranker's score; the rest keep
// theirs. An error names the query and what failed: text lookup, the reranker, or a
// score count that differs from the passage count.
func Rerank(ctx context.Context, rr Reranker, q Query, chunks []ChunkHit, topN int, text ChunkText) ([]ChunkHit, int, error) {
	n := min(topN, len(chunks))
	if n <= 0 {
		return chunks, 0, nil
	}
	passages := make([]string, n)
	for i := range n {
		t, err := text(chunks[i])
		if err != nil {
			return nil, 0, fmt.Errorf("evaluator: query %q: rerank: %w", q.ID, err)
		}
		passages[i] = t
	}
	scores, err := rr.Score(ctx, q.Text, passages)
	if err != nil {
		return nil, 0, fmt.Errorf("evaluator: query %q: rerank: %w", q.ID, err)
	}
	if len(scores) != n {
		return nil, 0, fmt.Errorf("evaluator: query %q: reranker returned %d scores for %d passages", q.ID, len(scores), n)
	}
	out := make([]ChunkHit, 0, len(chunks))
	for i := range n {
		if math.IsNaN(scores[i]) {
			return nil, 0, fmt.Errorf("evaluator: query %q: reranker scored passage %d NaN", q.ID, i)
		}
		h := chunks[i]
		h.Score = scores[i]
		out = append(out, h)
	}
	// Stable insertion sort by score: n is small (tens of chunks).
	for i := 1; i < n; i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return append(out, chunks[n:]...), n, nil
}

// AggregateReranked ranks documents after Rerank: first the documents of the reranked
// chunks by their best reranker score (as Aggregate does), then the documents found only
// in the tail, in Aggregate's order of the tail. So that the scores of a run file sort the
// same way, a tail document's Score is set below every reranked score: min - i for the
// i-th tail document (1-based); its Best keeps the retrieval score.
func AggregateReranked(chunks []ChunkHit, reranked int) []DocHit {
	if reranked <= 0 {
		return Aggregate(chunks)
	}
	head := Aggregate(chunks[:reranked])
	if reranked >= len(chunks) {
		return head
	}
	seen := make(map[string]bool, len(head))
	floor := 0.0
	for i, d := range head {
		seen[d.DocID] = true
		if i == 0 || d.Score < floor {
			floor = d.Score
		}
	}
	docs := head
	i := 0
	for _, d := range Aggregate(chunks[reranked:]) {
		if seen[d.DocID] {
			continue
		}
		i++
		d.Score = floor - float64(i)
		docs = append(docs, d)
	}
	return docs
}

// TextRetriever is a Retriever that says whether its hits carry chunk text. Run keeps every
// document's text in memory for reranking only when the retriever is not one that returns it.
type TextRetriever interface {
	Retriever
	ReturnsText() bool
}

func returnsText(r Retriever) bool {
	tr, ok := r.(TextRetriever)
	return ok && tr.ReturnsText()
}
