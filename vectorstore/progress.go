package vectorstore

import (
	"context"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
)

// CountDocuments returns the number of documents that have chunks in a collection or behind an
// alias: the chunks with ordinal 0. Controllers read a running build's progress with it.
func (s *Store) CountDocuments(ctx context.Context, name string) (int, error) {
	first := filters.Where().WithPath([]string{PropChunkOrdinal}).WithOperator(filters.Equal).WithValueInt(0)
	return s.count(ctx, name, first)
}
