package evaluator

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/query/expand"
	"github.com/ragops/ragops/vectorstore"
)

// StoreRetriever adapts vectorstore.Store.Search to Retriever for one search target, a
// revision collection or an Index alias. Dense maps to nearVector (score 1 - distance),
// BM25 to bm25, Hybrid to hybrid with the query's alpha and fusion; a query with EmbedText
// runs Dense as nearText and Hybrid with no vector, so Weaviate embeds the text with the
// target collection's text2vec-transformers vectorizer (vectorstore.Query.EmbedText).
type StoreRetriever struct {
	Store *vectorstore.Store
	// Target is the collection or alias searched.
	Target string
	// WithText asks for chunk text (the rerank stage uses it; otherwise it is cut from the
	// data set's corpus by the chunk's offsets).
	WithText bool
	// AccessGroups, when not nil, are a persona's groups: every search carries their access
	// filter (with ragopsv1alpha1.PublicGroup), and Unreadable (when set) counts the hits
	// whose groups share none of them.
	AccessGroups []string
	Unreadable   *atomic.Int64
	// Expansion is what Expand widens a hit to (expand.Context); the zero Spec returns nothing.
	Expansion expand.Spec
	// Attempts bounds tries of a search or an expansion that fails with a retryable error
	// (vectorstore.IsRetryable), with 250 ms doubling waits; 0 means 3.
	Attempts int
}

// ReturnsText reports whether the hits carry chunk text (WithText); see TextRetriever.
func (r StoreRetriever) ReturnsText() bool { return r.WithText }

// Search implements Retriever.
func (r StoreRetriever) Search(ctx context.Context, q Query, limit int) ([]ChunkHit, error) {
	vq := vectorstore.Query{Text: q.Text, Vector: q.Vector, Limit: limit, WithText: r.WithText, EmbedText: q.EmbedText}
	switch q.Mode {
	case Dense:
		vq.Mode = vectorstore.ModeDense
	case BM25:
		vq.Mode, vq.Vector, vq.EmbedText = vectorstore.ModeBM25, nil, false
	case Hybrid:
		vq.Mode, vq.Alpha, vq.Fusion = vectorstore.ModeHybrid, float32(q.Alpha), vectorstore.Fusion(q.Fusion)
	default:
		return nil, fmt.Errorf("evaluator: retrieval mode %q, want Dense, BM25 or Hybrid", q.Mode)
	}
	vq.Access = r.access()
	return r.retry(ctx, func() ([]vectorstore.Hit, error) { return r.Store.Search(ctx, r.Target, vq) })
}

// Expand implements Expander: the context of hit under r.Expansion (expand.Context), read
// from r.Target under the same access filter as Search, its chunks counted in Unreadable like
// hits (a persona's expanded context must hold nothing it may not read).
func (r StoreRetriever) Expand(ctx context.Context, hit ChunkHit) ([]ChunkHit, error) {
	vh := vectorstore.Hit{DocID: hit.DocID, Ordinal: hit.Ordinal}
	access := r.access()
	return r.retry(ctx, func() ([]vectorstore.Hit, error) {
		return expand.Context(ctx, r.Store, r.Target, vh, r.Expansion, access)
	})
}

// access is the persona's filter (its groups and the public group), nil without one.
func (r StoreRetriever) access() *vectorstore.AccessFilter {
	if r.AccessGroups == nil {
		return nil
	}
	return &vectorstore.AccessFilter{Groups: append(slices.Clone(r.AccessGroups), ragopsv1alpha1.PublicGroup)}
}

// retry runs read up to r.Attempts times while it fails retryably and converts its hits,
// counting the unreadable ones with a persona.
func (r StoreRetriever) retry(ctx context.Context, read func() ([]vectorstore.Hit, error)) ([]ChunkHit, error) {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	wait := 250 * time.Millisecond
	for try := 1; ; try++ {
		hits, err := read()
		if err == nil {
			out := make([]ChunkHit, len(hits))
			for i, h := range hits {
				out[i] = ChunkHit{DocID: h.DocID, Ordinal: h.Ordinal, Start: h.Start, End: h.End, Score: float64(h.Score), Text: h.Text}
			}
			if a := r.access(); a != nil && r.Unreadable != nil {
				r.Unreadable.Add(int64(unreadable(hits, a.Groups)))
			}
			return out, nil
		}
		if try >= attempts || !vectorstore.IsRetryable(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// unreadable counts the hits whose access groups share none of groups.
func unreadable(hits []vectorstore.Hit, groups []string) int {
	n := 0
	for _, h := range hits {
		if !slices.ContainsFunc(h.AccessGroups, func(g string) bool { return slices.Contains(groups, g) }) {
			n++
		}
	}
	return n
}
