package vectorstore

import (
	"context"
	"fmt"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
)

// CopyStats is what [Store.CopyCollection] wrote.
type CopyStats struct {
	// Objects is the number of chunk objects copied.
	Objects int64
	// Documents is the number of documents with a chunk of ordinal 0 among them.
	Documents int64
	// Bytes are the copied chunks' UTF-8 text plus their float32 vectors (4 bytes x
	// dimensions), as a build reports StoredBytes.
	Bytes int64
}

// CopyCollection fills collection to with the chunk objects of collection from: their text,
// properties and stored vectors, unchanged but for the revision, which is to's. It pages
// through from with the cursor (pageSize objects a request, default 500), vectors included,
// and batch-writes each page with [Store.Upsert], so every object gets its deterministic
// [ChunkID] in to's revision: a copy stopped part-way and run again overwrites what it wrote
// and never duplicates. Nothing is embedded; the vectors are the uncompressed ones Weaviate
// keeps beside any quantized index, so to may use another vector index or compression. to
// must exist with from's dimensions. onPage, when not nil, is called after each page is
// written with the objects copied so far (progress; cancelling ctx there stops the copy).
//
// Cost: one read of every object of from with its vector, and one write of each into to.
//
// Errors: [*CollectionNotFoundError] for either; [*DimensionError] when to's dimensions
// differ; typed server and network errors; ctx's error when it ends.
func (s *Store) CopyCollection(ctx context.Context, from, to string, pageSize int, onPage func(copied int64)) (CopyStats, error) {
	if pageSize <= 0 {
		pageSize = 500
	}
	src, err := s.Collection(ctx, from)
	if err != nil {
		return CopyStats{}, err
	}
	dst, err := s.Collection(ctx, to)
	if err != nil {
		return CopyStats{}, err
	}
	if src.Dimensions != dst.Dimensions {
		return CopyStats{}, &DimensionError{Op: "copy", Collection: to, Expected: dst.Dimensions, Actual: src.Dimensions}
	}
	props := []string{PropText, PropDocID, PropChunkOrdinal, PropStart, PropEnd, PropHeadingPath, PropPageStart, PropPageEnd, PropDocHash}
	if src.AccessProperties {
		// Access groups travel with the chunks: a copy serves the same documents to the same groups.
		props = append(props, PropAccessGroups, PropAccessKey)
	}
	var st CopyStats
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var res []graphql.SearchResult
		err := s.retry(ctx, func() error {
			var err error
			res, err = s.client.Experimental().Search().WithCollection(from).WithLimit(pageSize).WithAfter(after).
				WithProperties(props...).WithMetadata(&graphql.Metadata{ID: true, Vector: true}).Do(ctx)
			return classify("copy", from, err)
		})
		if err != nil {
			return st, err
		}
		chunks := make([]Chunk, 0, len(res))
		for _, r := range res {
			c := Chunk{Ordinal: intProp(r.Properties[PropChunkOrdinal]), Start: intProp(r.Properties[PropStart]),
				End: intProp(r.Properties[PropEnd]), PageStart: intProp(r.Properties[PropPageStart]),
				PageEnd: intProp(r.Properties[PropPageEnd]), Vector: r.Vector}
			c.DocID, _ = r.Properties[PropDocID].(string)
			c.Text, _ = r.Properties[PropText].(string)
			c.DocHash, _ = r.Properties[PropDocHash].(string)
			if lv, ok := r.Properties[PropHeadingPath].(*pb.ListValue); ok {
				c.HeadingPath = lv.GetTextValues().GetValues()
			}
			c.AccessKey, _ = r.Properties[PropAccessKey].(string)
			if lv, ok := r.Properties[PropAccessGroups].(*pb.ListValue); ok && c.AccessKey != "" {
				c.AccessGroups = lv.GetTextValues().GetValues()
			}
			if len(c.Vector) == 0 {
				return st, &ServerError{Op: "copy", Collection: from, Err: fmt.Errorf("object %s came without its vector", r.ID)}
			}
			chunks = append(chunks, c)
		}
		if err := s.Upsert(ctx, to, chunks); err != nil {
			return st, err
		}
		for i := range chunks {
			st.Objects++
			if chunks[i].Ordinal == 0 {
				st.Documents++
			}
			st.Bytes += int64(len(chunks[i].Text)) + 4*int64(len(chunks[i].Vector))
		}
		if onPage != nil {
			onPage(st.Objects)
		}
		if len(res) < pageSize {
			return st, nil
		}
		after = res[len(res)-1].ID
	}
}

// intProp reads an int property of a client-decoded object (int64, float64 or int; 0 else).
func intProp(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case float64:
		return int(x)
	case int:
		return x
	}
	return 0
}
