package vectorstore

import (
	"context"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
)

// CountDocuments returns the number of documents that have chunks in a collection or behind an
// alias: the chunks with ordinal 0. Controllers read a running build's progress with it.
//
// Consistency: a filtered aggregate is answered from one replica of each shard (the
// coordinating node's own, when it holds one), with no consistency level to ask for more, and
// an object listing at consistency ALL only repairs the objects that one replica returns, so
// neither sees objects a lagging replica lacks: in a replicated collection this count can be
// low until the replicas converge (async replication, repair on read), while [Store.Count]
// is not.
func (s *Store) CountDocuments(ctx context.Context, name string) (int, error) {
	first := filters.Where().WithPath([]string{PropChunkOrdinal}).WithOperator(filters.Equal).WithValueInt(0)
	return s.count(ctx, name, first)
}
