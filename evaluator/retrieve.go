package evaluator

import (
	"context"
	"errors"
	"fmt"
	"sort"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Mode is a retrieval mode: one type shared with the API (Evaluation.spec.mode) and
// package vectorstore.
type Mode = ragopsv1alpha1.RetrievalMode

// Retrieval modes.
const (
	// Dense ranks chunks by vector similarity to the query embedding (Weaviate nearVector).
	Dense = ragopsv1alpha1.ModeDense
	// BM25 ranks chunks by BM25F over their text (Weaviate bm25).
	BM25 = ragopsv1alpha1.ModeBM25
	// Hybrid fuses a BM25 and a dense ranking (Weaviate hybrid) with Query.Alpha and Query.Fusion.
	Hybrid = ragopsv1alpha1.ModeHybrid
)

// Fusion is how a hybrid search merges its BM25 and dense rankings (Weaviate fusionType):
// one type shared with the API and package vectorstore.
type Fusion = ragopsv1alpha1.FusionType

// Fusion types of Weaviate's hybrid search.
const (
	// RankedFusion sums 1/(60+rank) over the two rankings (reciprocal rank fusion,
	// Cormack et al. 2009), weighted by alpha.
	RankedFusion = ragopsv1alpha1.FusionRanked
	// RelativeScoreFusion min-max normalises each ranking's scores and sums them, weighted by
	// alpha (Weaviate's default since 1.24).
	RelativeScoreFusion = ragopsv1alpha1.FusionRelativeScore
)

// Query is one search request. Vector is set for Dense and Hybrid and nil for BM25, unless
// EmbedText asks the retriever to embed Text itself. Alpha weighs Hybrid: 1 is pure dense, 0
// pure BM25 (Weaviate's convention).
type Query struct {
	ID     string
	Text   string
	Vector []float32
	Mode   Mode
	Alpha  float64
	Fusion Fusion
	// EmbedText (Dense, Hybrid; Vector nil) has the index embed Text with its own query model,
	// as an application's nearText or text hybrid query does (see Config.EmbedByRetriever).
	EmbedText bool
}

// ChunkHit is one retrieved chunk. Start and End are byte offsets of the chunk in its
// document's text; Score is higher for better hits (a distance must be turned into a
// similarity by the retriever). Text is the chunk text when the retriever returns it; the
// rerank stage needs it and otherwise cuts it from the data set's corpus by the offsets.
type ChunkHit struct {
	DocID   string  `json:"docId"`
	Ordinal int     `json:"ordinal"`
	Start   int     `json:"start"`
	End     int     `json:"end"`
	Score   float64 `json:"score"`
	Text    string  `json:"-"`
}

// Retriever searches the chunks of one index. Search returns at most limit hits, best first;
// fewer than limit means the index holds no more matching chunks. Implementations live with
// the store (see the vectorstore adapter in this package).
type Retriever interface {
	Search(ctx context.Context, q Query, limit int) ([]ChunkHit, error)
}

// Expander widens a chunk hit to its context (small-to-big): the chunks around it in its
// document, itself included when readable, in ordinal order, with their text. See
// StoreRetriever.Expand and package query/expand.
type Expander interface {
	Expand(ctx context.Context, hit ChunkHit) ([]ChunkHit, error)
}

// QueryEncoder embeds a query's text for Dense and Hybrid retrieval, with the same model
// (and query prefix, if the model uses one) that embedded the chunks.
type QueryEncoder interface {
	EncodeQuery(ctx context.Context, text string) ([]float32, error)
}

// DocHit is a document with the score and position of its best chunk.
type DocHit struct {
	DocID string
	Score float64
	// Best is the document's highest-ranked chunk.
	Best ChunkHit
}

// Aggregate turns chunk hits into documents scored by their best chunk (max over chunk
// scores, as in Günther et al. 2024's late chunking evaluation and the design's "best chunk
// per document"), ranked as trec_eval ranks a run: score descending, ties by document ID
// descending.
func Aggregate(hits []ChunkHit) []DocHit {
	best := map[string]int{}
	var docs []DocHit
	for _, h := range hits {
		i, ok := best[h.DocID]
		if !ok {
			best[h.DocID] = len(docs)
			docs = append(docs, DocHit{DocID: h.DocID, Score: h.Score, Best: h})
			continue
		}
		if h.Score > docs[i].Score {
			docs[i].Score, docs[i].Best = h.Score, h
		}
	}
	sortDocs(docs)
	return docs
}

func sortDocs(docs []DocHit) {
	sort.SliceStable(docs, func(i, j int) bool {
		if docs[i].Score != docs[j].Score {
			return docs[i].Score > docs[j].Score
		}
		return docs[i].DocID > docs[j].DocID
	})
}

// Growth bounds how many chunks RetrieveDocuments asks for.
type Growth struct {
	// Initial is the first limit; 0 means 5 chunks per wanted document, at least 50.
	Initial int
	// Max is the largest limit tried; 0 means 10,000 (Weaviate's default QUERY_MAXIMUM_RESULTS).
	Max int
}

func (g Growth) initial(k int) int {
	if g.Initial > 0 {
		return g.Initial
	}
	return max(50, 5*k)
}

func (g Growth) max() int {
	if g.Max > 0 {
		return g.Max
	}
	return 10000
}

// Retrieved is the outcome of RetrieveDocuments for one query.
type Retrieved struct {
	// Chunks are all chunk hits of the last search, best first.
	Chunks []ChunkHit
	// Docs are the documents of Chunks by best chunk, best first, at most k.
	Docs []DocHit
	// Limit is the chunk limit of the last search; Searches counts the searches made.
	Limit, Searches int
	// Short is true when fewer than k distinct documents exist within Growth.Max chunks.
	Short bool
}

// RetrieveDocuments searches with a growing chunk limit until the hits hold k distinct
// documents, the index runs out of chunks (fewer hits than the limit), or the limit reaches
// g.Max; each retry doubles the limit. Because hits come best first, every document whose
// best chunk beats the last hit is among them, so the top k documents by best chunk are
// exact (up to ties with the last hit's score) when the retriever returns the true top
// `limit` chunks. Weaviate 1.37.6's bm25 was measured not to on freshly imported SciFact
// chunks (a limit of 500 missed the chunk that a limit of 1000 ranks first; see
// store_test.go), so a larger Growth.Initial buys accuracy there. For Hybrid with RelativeScoreFusion the
// fused scores depend on the limit, as in Weaviate itself.
func RetrieveDocuments(ctx context.Context, r Retriever, q Query, k int, g Growth) (Retrieved, error) {
	if k < 1 {
		return Retrieved{}, fmt.Errorf("evaluator: k=%d, want k >= 1", k)
	}
	if r == nil {
		return Retrieved{}, errors.New("evaluator: no retriever")
	}
	limit := min(g.initial(k), g.max())
	var out Retrieved
	for {
		hits, err := r.Search(ctx, q, limit)
		out.Searches++
		if err != nil {
			return out, fmt.Errorf("evaluator: query %q: search with limit %d: %w", q.ID, limit, err)
		}
		if len(hits) > limit {
			return out, fmt.Errorf("evaluator: query %q: retriever returned %d hits for limit %d", q.ID, len(hits), limit)
		}
		for i, h := range hits {
			if h.DocID == "" {
				return out, fmt.Errorf("evaluator: query %q: hit %d has no document ID", q.ID, i)
			}
		}
		docs := Aggregate(hits)
		out.Chunks, out.Limit = hits, limit
		if len(docs) >= k || len(hits) < limit || limit >= g.max() {
			out.Short = len(docs) < k
			if len(docs) > k {
				docs = docs[:k]
			}
			out.Docs = docs
			return out, nil
		}
		limit = min(2*limit, g.max())
	}
}
