package vectorstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/grpc/common"
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

// Neighbours returns the chunks of document docID with ordinals in [from, to] in target (a
// collection or an alias), in ordinal order, with their text: a hit's surrounding context
// (small-to-big). With access set, only chunks it may read are returned (the filter is part
// of the request, as in Search); a filter without groups is refused.
//
// Errors: an empty docID or to < from; those of Search.
func (s *Store) Neighbours(ctx context.Context, target, docID string, from, to int, access *AccessFilter) ([]Hit, error) {
	if docID == "" || to < from {
		return nil, fmt.Errorf("vectorstore: neighbours in %s: document %q ordinals [%d, %d]", target, docID, from, to)
	}
	from = max(from, 0)
	ops := []*filters.WhereBuilder{docFilter(docID),
		filters.Where().WithPath([]string{PropChunkOrdinal}).WithOperator(filters.GreaterThanEqual).WithValueInt(int64(from)),
		filters.Where().WithPath([]string{PropChunkOrdinal}).WithOperator(filters.LessThanEqual).WithValueInt(int64(to))}
	props := []string{PropDocID, PropChunkOrdinal, PropStart, PropEnd, PropHeadingPath, PropRevision, PropPageStart, PropPageEnd, PropText}
	if access != nil {
		w, err := access.where(target)
		if err != nil {
			return nil, err
		}
		ops = append(ops, w)
		props = append(props, PropAccessGroups)
	}
	req := &pb.SearchRequest{
		Collection:       target,
		Limit:            uint32(to - from + 1),
		ConsistencyLevel: common.GetConsistencyLevel(s.cfg.ReadConsistency),
		Properties:       &pb.PropertiesRequest{NonRefProperties: props},
		Metadata:         &pb.MetadataRequest{Uuid: true},
		Filters:          filters.Where().WithOperator(filters.And).WithOperands(ops).ToGRPC(),
		Uses_123Api:      true,
		Uses_125Api:      true,
		Uses_127Api:      true,
	}
	reply, err := s.searchGRPC(ctx, req)
	if err != nil {
		return nil, classify("neighbours", target, err)
	}
	hits := make([]Hit, 0, len(reply.GetResults()))
	for _, r := range reply.GetResults() {
		p := r.GetProperties().GetNonRefProps().GetFields()
		h := Hit{ID: r.GetMetadata().GetId(), DocID: p[PropDocID].GetTextValue(), Revision: p[PropRevision].GetTextValue(),
			Text: p[PropText].GetTextValue(), Ordinal: intValue(p[PropChunkOrdinal]), Start: intValue(p[PropStart]), End: intValue(p[PropEnd]),
			PageStart: intValue(p[PropPageStart]), PageEnd: intValue(p[PropPageEnd]),
			HeadingPath: p[PropHeadingPath].GetListValue().GetTextValues().GetValues()}
		if access != nil {
			h.AccessGroups = p[PropAccessGroups].GetListValue().GetTextValues().GetValues()
		}
		hits = append(hits, h)
	}
	slices.SortFunc(hits, func(a, b Hit) int { return a.Ordinal - b.Ordinal })
	return hits, nil
}
