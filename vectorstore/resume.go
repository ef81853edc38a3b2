package vectorstore

import (
	"context"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
)

// DocumentState is what a collection holds of one document: enough to tell a document whose
// chunks are all written from one an interrupted write left partial or mixed.
type DocumentState struct {
	// Hash is the DocHash stored on the document's chunks ("" when none was stored, or when
	// its chunks disagree: see Mixed).
	Hash string
	// Chunks is the number of chunk objects of the document.
	Chunks int
	// MaxOrdinal is the largest chunk ordinal present (-1 with no chunks).
	MaxOrdinal int
	// Mixed is true when the chunks carry different hashes (a replacement stopped halfway).
	Mixed bool
	// AccessKey is the access key stored on the chunks (PropAccessKey; "" when none, or when
	// they disagree: AccessMixed).
	AccessKey   string
	AccessMixed bool
}

// HasAccess reports whether every chunk holds access key key (the groups of the rules key
// stands for; "" for no rules).
func (d DocumentState) HasAccess(key string) bool {
	return !d.AccessMixed && d.AccessKey == key
}

// Complete reports whether the state is exactly n chunks (ordinals 0..n-1, chunk IDs being
// unique per ordinal) of a document with content hash hash.
func (d DocumentState) Complete(hash string, n int) bool {
	return !d.Mixed && hash != "" && d.Hash == hash && d.Chunks == n && d.MaxOrdinal == n-1
}

// Consistent reports whether the chunks agree on one non-empty hash and their ordinals are
// contiguous from 0 (count = largest ordinal + 1): the state a finished write leaves.
func (d DocumentState) Consistent() bool {
	return !d.Mixed && d.Hash != "" && d.Chunks == d.MaxOrdinal+1
}

// DocumentStates returns the [DocumentState] of every document with chunks in the collection,
// keyed by document ID, for the documents keep accepts (nil: all). It pages through all
// objects with a cursor fetching only docId, docHash and chunkOrdinal, pageSize objects a
// request (default 1000): cost is linear in the number of chunks and needs no vectors.
// A resumed build skips the documents already Complete, and rewrites the others whole.
//
// Errors: [*CollectionNotFoundError]; typed server and network errors.
func (s *Store) DocumentStates(ctx context.Context, collection string, pageSize int, keep func(docID string) bool) (map[string]DocumentState, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	info, err := s.Collection(ctx, collection)
	if err != nil {
		return nil, err
	}
	props := []string{PropDocID, PropDocHash, PropChunkOrdinal}
	if info.AccessProperties {
		props = append(props, PropAccessKey)
	}
	out := map[string]DocumentState{}
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
			return nil, err
		}
		for _, r := range res {
			id, _ := r.Properties[PropDocID].(string)
			if keep != nil && !keep(id) {
				continue
			}
			h, _ := r.Properties[PropDocHash].(string)
			ak, _ := r.Properties[PropAccessKey].(string)
			ord := ordinalOf(r.Properties[PropChunkOrdinal])
			st, ok := out[id]
			if !ok {
				st = DocumentState{Hash: h, MaxOrdinal: -1, AccessKey: ak}
			} else {
				if st.Hash != h {
					st.Mixed, st.Hash = true, ""
				}
				if st.AccessKey != ak {
					st.AccessMixed, st.AccessKey = true, ""
				}
			}
			st.Chunks++
			st.MaxOrdinal = max(st.MaxOrdinal, ord)
			out[id] = st
		}
		if len(res) < pageSize {
			return out, nil
		}
		after = res[len(res)-1].ID
	}
}

// ordinalOf reads an int property as the gRPC search returns it (int64, or float64 from JSON).
func ordinalOf(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case int:
		return n
	case float64:
		return int(n)
	case int32:
		return int(n)
	}
	return -1
}
