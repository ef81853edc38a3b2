package vectorstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
)

// AccessPropertiesError is an access operation on a collection without the access
// properties ([CollectionInfo.AccessProperties]: created before issue 52): it cannot hold or
// filter access groups, so access rules need a rebuilt revision.
type AccessPropertiesError struct{ Collection string }

func (e *AccessPropertiesError) Error() string {
	return fmt.Sprintf("vectorstore: collection %s has no %s property (created before access rules): rebuild the revision to use access rules", e.Collection, PropAccessGroups)
}

// AccessFilter restricts a search to the chunks whose PropAccessGroups hold at least one of
// Groups. Groups must not be empty: a search with a filter that names no group is refused,
// never run unfiltered.
type AccessFilter struct {
	Groups []string
}

// where returns the filter, or an error for an empty group list or an empty group.
func (f *AccessFilter) where(target string) (*filters.WhereBuilder, error) {
	if len(f.Groups) == 0 || slices.Contains(f.Groups, "") {
		return nil, fmt.Errorf("vectorstore: search %s: access filter with no groups or an empty group %q: refused", target, f.Groups)
	}
	return filters.Where().WithPath([]string{PropAccessGroups}).WithOperator(filters.ContainsAny).WithValueText(f.Groups...), nil
}

// DocumentAccess is the access of one document to write with [Store.SetAccess]: its groups,
// and how many chunks it has (from [Store.DocumentStates]).
type DocumentAccess struct {
	DocID  string
	Groups []string
	Chunks int
}

// setAccessBatchChunks bounds the chunks one SetAccess read fetches (under Weaviate's
// QUERY_MAXIMUM_RESULTS, 10,000 by default).
const setAccessBatchChunks = 2000

// SetAccess rewrites the access groups and key of the documents' chunks without embedding:
// it reads their chunks with their stored vectors (documents in batches of at most
// setAccessBatchChunks chunks) and upserts them with the new groups, so text, spans and
// vectors stay as they were and Weaviate's vectorizer does not run (the vector is sent). It
// returns the number of chunks rewritten.
//
// Errors: [*AccessPropertiesError]; a document holding more chunks than its DocumentAccess
// says (its chunks are being rewritten: sync again); typed server errors.
func (s *Store) SetAccess(ctx context.Context, collection, key string, docs []DocumentAccess) (int, error) {
	info, err := s.Collection(ctx, collection)
	if err != nil {
		return 0, err
	}
	if !info.AccessProperties {
		return 0, &AccessPropertiesError{Collection: collection}
	}
	byID := make(map[string][]string, len(docs))
	total := 0
	for lo := 0; lo < len(docs); {
		var ids []string
		want := 0
		for lo < len(docs) && (len(ids) == 0 || want+docs[lo].Chunks <= setAccessBatchChunks) {
			byID[docs[lo].DocID] = docs[lo].Groups
			ids = append(ids, docs[lo].DocID)
			want += docs[lo].Chunks
			lo++
		}
		props := []string{PropText, PropDocID, PropChunkOrdinal, PropStart, PropEnd, PropHeadingPath, PropPageStart, PropPageEnd, PropDocHash}
		limit := want + 1
		var res []graphql.SearchResult
		err := s.retry(ctx, func() error {
			var err error
			res, err = s.client.Experimental().Search().WithCollection(collection).WithLimit(limit).WithWhere(docsFilter(ids)).
				WithProperties(props...).WithMetadata(&graphql.Metadata{ID: true, Vector: true}).Do(ctx)
			return classify("set access", collection, err)
		})
		if err != nil {
			return total, err
		}
		if len(res) > want {
			return total, &ServerError{Op: "set access", Collection: collection, Err: fmt.Errorf("documents %v hold more than the %d chunks counted: they are being rewritten", ids, want)}
		}
		chunks := make([]Chunk, 0, len(res))
		for _, r := range res {
			c := Chunk{Ordinal: intProp(r.Properties[PropChunkOrdinal]), Start: intProp(r.Properties[PropStart]),
				End: intProp(r.Properties[PropEnd]), PageStart: intProp(r.Properties[PropPageStart]),
				PageEnd: intProp(r.Properties[PropPageEnd]), Vector: r.Vector, AccessKey: key}
			c.DocID, _ = r.Properties[PropDocID].(string)
			c.Text, _ = r.Properties[PropText].(string)
			c.DocHash, _ = r.Properties[PropDocHash].(string)
			if lv, ok := r.Properties[PropHeadingPath].(*pb.ListValue); ok {
				c.HeadingPath = lv.GetTextValues().GetValues()
			}
			c.AccessGroups = byID[c.DocID]
			if len(c.Vector) == 0 {
				return total, &ServerError{Op: "set access", Collection: collection, Err: fmt.Errorf("object %s came without its vector", r.ID)}
			}
			chunks = append(chunks, c)
		}
		if err := s.Upsert(ctx, collection, chunks); err != nil {
			return total, err
		}
		total += len(chunks)
	}
	return total, nil
}
