package vectorstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"
)

// deleteWhere removes every object of collection matching where, in rounds (the server caps
// one batch delete at QUERY_MAXIMUM_RESULTS objects). It returns the number deleted.
func (s *Store) deleteWhere(ctx context.Context, collection string, where *filters.WhereBuilder) (int, error) {
	total := 0
	for {
		var res *models.BatchDeleteResponse
		err := s.retry(ctx, func() error {
			var err error
			s.requests.deletes.Add(1)
			d := s.client.Batch().ObjectsBatchDeleter().WithClassName(collection).
				WithOutput("minimal").WithWhere(where)
			if s.cfg.WriteConsistency != "" {
				d = d.WithConsistencyLevel(s.cfg.WriteConsistency)
			}
			res, err = d.Do(ctx)
			return classify("delete", collection, err)
		})
		if err != nil {
			return total, err
		}
		if res.Results == nil {
			return total, nil
		}
		total += int(res.Results.Successful)
		if res.Results.Failed > 0 {
			return total, &ServerError{Op: "delete", Collection: collection,
				Err: fmt.Errorf("%d of %d matching objects failed to delete", res.Results.Failed, res.Results.Matches)}
		}
		if res.Results.Matches == 0 || res.Results.Matches < res.Results.Limit {
			return total, nil
		}
	}
}

func docFilter(docID string) *filters.WhereBuilder {
	return filters.Where().WithPath([]string{PropDocID}).WithOperator(filters.Equal).WithValueText(docID)
}

// DeleteDocument removes all chunks of document docID from collection and returns how many
// there were. A document with no chunks is not an error.
func (s *Store) DeleteDocument(ctx context.Context, collection, docID string) (int, error) {
	if docID == "" {
		return 0, fmt.Errorf("vectorstore: delete document in %s: empty document id", collection)
	}
	if _, err := s.Collection(ctx, collection); err != nil {
		return 0, err
	}
	return s.deleteWhere(ctx, collection, docFilter(docID))
}

// ReplaceDocument makes chunks the complete set of document docID's chunks in collection: it
// upserts them (same IDs overwrite in place, so the document stays searchable throughout), then
// deletes the document's chunks with ordinal >= len(chunks) left from a longer earlier version.
// Empty chunks deletes the document.
//
// Errors: a chunk of another document, or ordinals that are not exactly 0..len(chunks)-1;
// everything [Store.Upsert] returns.
func (s *Store) ReplaceDocument(ctx context.Context, collection, docID string, chunks []Chunk) error {
	return s.ReplaceDocuments(ctx, collection, map[string][]Chunk{docID: chunks})
}

// DeleteBatchDocuments is how many document ids one batch delete names (DeleteDocuments,
// ReplaceDocuments): a few hundred keep the filter small and the requests few.
const DeleteBatchDocuments = 250

// ReplaceDocuments is ReplaceDocument for many documents (document id -> its complete chunks)
// in few requests: one Upsert of all their chunks, then one batch delete of the stale chunks
// (ordinal >= the document's new chunk count) per DeleteBatchDocuments documents.
//
// Errors: those of ReplaceDocument, naming the document.
func (s *Store) ReplaceDocuments(ctx context.Context, collection string, docs map[string][]Chunk) error {
	var all []Chunk
	ids := make([]string, 0, len(docs))
	for docID, chunks := range docs {
		if err := checkDocumentChunks(collection, docID, chunks); err != nil {
			return err
		}
		all = append(all, chunks...)
		ids = append(ids, docID)
	}
	if len(all) > 0 {
		if err := s.Upsert(ctx, collection, all); err != nil {
			return err
		}
	} else if _, err := s.Collection(ctx, collection); err != nil {
		return err
	}
	slices.Sort(ids)
	for lo := 0; lo < len(ids); lo += DeleteBatchDocuments {
		// One operand per distinct chunk count: documents with n chunks lose ordinals >= n.
		byCount := map[int][]string{}
		for _, id := range ids[lo:min(lo+DeleteBatchDocuments, len(ids))] {
			byCount[len(docs[id])] = append(byCount[len(docs[id])], id)
		}
		var ops []*filters.WhereBuilder
		for _, n := range slices.Sorted(maps.Keys(byCount)) {
			ops = append(ops, filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{
				docsFilter(byCount[n]),
				filters.Where().WithPath([]string{PropChunkOrdinal}).WithOperator(filters.GreaterThanEqual).WithValueInt(int64(n)),
			}))
		}
		where := ops[0]
		if len(ops) > 1 {
			where = filters.Where().WithOperator(filters.Or).WithOperands(ops)
		}
		if _, err := s.deleteWhere(ctx, collection, where); err != nil {
			return err
		}
	}
	return nil
}

// checkDocumentChunks checks that chunks are all of document docID with ordinals exactly
// 0..len(chunks)-1.
func checkDocumentChunks(collection, docID string, chunks []Chunk) error {
	if docID == "" {
		return fmt.Errorf("vectorstore: replace document in %s: empty document id", collection)
	}
	seen := make([]bool, len(chunks))
	for i := range chunks {
		c := &chunks[i]
		if c.DocID != docID {
			return fmt.Errorf("vectorstore: replace document %q in %s: chunk %d belongs to document %q", docID, collection, i, c.DocID)
		}
		if c.Ordinal < 0 || c.Ordinal >= len(chunks) || seen[c.Ordinal] {
			return fmt.Errorf("vectorstore: replace document %q in %s: ordinals must be exactly 0..%d, chunk %d has %d (out of range or repeated)",
				docID, collection, len(chunks)-1, i, c.Ordinal)
		}
		seen[c.Ordinal] = true
	}
	return nil
}

// docsFilter matches the chunks of any of the documents ids (field tokenization: whole ids).
func docsFilter(ids []string) *filters.WhereBuilder {
	if len(ids) == 1 {
		return docFilter(ids[0])
	}
	return filters.Where().WithPath([]string{PropDocID}).WithOperator(filters.ContainsAny).WithValueText(ids...)
}

// DeleteDocuments removes all chunks of the documents ids from collection, one batch delete
// per DeleteBatchDocuments ids, and returns how many chunks there were. Documents with no
// chunks are not an error.
//
// Errors: an empty id; those of the batch delete (chunks of earlier batches stay deleted).
func (s *Store) DeleteDocuments(ctx context.Context, collection string, ids []string) (int, error) {
	if slices.Contains(ids, "") {
		return 0, fmt.Errorf("vectorstore: delete documents in %s: empty document id", collection)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := s.Collection(ctx, collection); err != nil {
		return 0, err
	}
	ids = slices.Sorted(slices.Values(ids))
	total := 0
	for lo := 0; lo < len(ids); lo += DeleteBatchDocuments {
		n, err := s.deleteWhere(ctx, collection, docsFilter(ids[lo:min(lo+DeleteBatchDocuments, len(ids))]))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Count returns the number of chunk objects in a collection or behind an alias.
//
// Consistency: Weaviate's Aggregate takes no consistency level (v1.37: neither the GraphQL
// Aggregate nor the gRPC AggregateRequest has one), but it answers this unfiltered meta
// count by asking every replica of every shard and taking the most common answer (the median
// when there is none): a replica that lags behind the others does not change it
// (TestClusterCountThroughALaggingReplicaIsExact).
func (s *Store) Count(ctx context.Context, name string) (int, error) {
	return s.count(ctx, name, nil)
}

// CountDocument returns the number of chunks of document docID in a collection or behind an
// alias. Like every filtered aggregate it reads one replica per shard (see CountDocuments).
func (s *Store) CountDocument(ctx context.Context, name, docID string) (int, error) {
	return s.count(ctx, name, docFilter(docID))
}

func (s *Store) count(ctx context.Context, name string, where *filters.WhereBuilder) (int, error) {
	var n int
	err := s.retry(ctx, func() error {
		ab := s.client.GraphQL().Aggregate().WithClassName(name).
			WithFields(graphql.Field{Name: "meta", Fields: []graphql.Field{{Name: "count"}}})
		if where != nil {
			ab = ab.WithWhere(where)
		}
		resp, err := ab.Do(ctx)
		if err != nil {
			return classify("count", name, err)
		}
		if err := graphQLError("count", name, resp); err != nil {
			return err
		}
		var out struct {
			Aggregate map[string][]struct {
				Meta struct {
					Count int `json:"count"`
				} `json:"meta"`
			}
		}
		b, _ := json.Marshal(resp.Data)
		if err := json.Unmarshal(b, &out); err != nil {
			return &ServerError{Op: "count", Collection: name, Err: fmt.Errorf("decode aggregate reply: %w", err)}
		}
		rows, ok := out.Aggregate[name]
		if !ok && len(out.Aggregate) == 1 { // queried through an alias
			for _, r := range out.Aggregate {
				rows = r
			}
		}
		if len(rows) == 0 {
			return &ServerError{Op: "count", Collection: name, Err: fmt.Errorf("aggregate reply has no rows: %s", b)}
		}
		n = rows[0].Meta.Count
		return nil
	})
	return n, err
}

// graphQLError turns the errors a GraphQL reply carries next to a nil call error (FACTS.md)
// into a typed error.
func graphQLError(op, name string, resp *models.GraphQLResponse) error {
	if resp == nil {
		return &ServerError{Op: op, Collection: name, Err: fmt.Errorf("empty GraphQL reply")}
	}
	if len(resp.Errors) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(resp.Errors))
	for _, e := range resp.Errors {
		if e != nil {
			msgs = append(msgs, e.Message)
		}
	}
	return classify(op, name, fmt.Errorf("graphql: %s", strings.Join(msgs, "; ")))
}

// DocumentHashes returns, for every document with chunks in the collection, its DocHash (the
// hash stored on its chunks; "" when none was stored). It pages through all objects with a
// cursor fetching only docId and docHash, pageSize objects a request (default 1000): cost is
// linear in the number of chunks. Incremental sync compares it with the corpus to find changed,
// new and removed documents.
func (s *Store) DocumentHashes(ctx context.Context, collection string, pageSize int) (map[string]string, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	if _, err := s.Collection(ctx, collection); err != nil {
		return nil, err
	}
	out := map[string]string{}
	err := s.pageProperties(ctx, collection, pageSize, []string{PropDocID, PropDocHash}, func(p map[string]any) {
		id, _ := p[PropDocID].(string)
		h, _ := p[PropDocHash].(string)
		if old, ok := out[id]; !ok || old == "" {
			out[id] = h
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pageProperties pages through every object of collection with a cursor, pageSize objects a
// request, fetching only props, and hands each object's properties to visit.
func (s *Store) pageProperties(ctx context.Context, collection string, pageSize int, props []string, visit func(map[string]any)) error {
	after := ""
	for {
		var res []graphql.SearchResult
		err := s.retry(ctx, func() error {
			var err error
			res, err = s.client.Experimental().Search().WithCollection(collection).WithLimit(pageSize).
				WithAfter(after).WithProperties(props...).Do(ctx)
			return classify("list documents", collection, err)
		})
		if err != nil {
			return err
		}
		for _, r := range res {
			visit(r.Properties)
		}
		if len(res) < pageSize {
			return nil
		}
		after = res[len(res)-1].ID
	}
}
