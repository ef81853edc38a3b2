package vectorstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
)

// metadataOf reads the named properties and metaHash of every chunk of collection by
// document ID and ordinal.
func metadataOf(t *testing.T, s *Store, collection string, names ...string) map[[2]any]map[string]any {
	t.Helper()
	res, err := s.Client().Experimental().Search().WithCollection(collection).WithLimit(1000).
		WithProperties(append([]string{PropDocID, PropChunkOrdinal, PropMetaHash}, names...)...).Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]any]map[string]any{}
	for _, r := range res {
		c, err := chunkOf(graphql.SearchResult{ID: r.ID, Properties: r.Properties, Vector: []float32{1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Properties[PropMetaHash] = r.Properties[PropMetaHash]
		out[[2]any{c.DocID, c.Ordinal}] = c.Properties
	}
	return out
}

// Issue 52: a copy revision (a storage-only change) keeps the documents' metadata
// properties, typed as in the source collection, and their metadata hashes.
func TestCopyCollectionKeepsMetadataProperties(t *testing.T) {
	srv := sharedServer(t)
	s := storeFor(t, srv, Config{})
	ctx := context.Background()
	from, to := "Rag_meta_copy_from", "Rag_meta_copy_to"
	for _, c := range []CollectionSpec{{Name: from, Revision: "r1", Dimensions: 4}, {Name: to, Revision: "r2", Dimensions: 4, Index: VectorIndex{Type: IndexFlat}}} {
		if err := s.EnsureCollection(ctx, c); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.DeleteCollection(context.Background(), c.Name) })
	}
	props := []Property{{"type", "text"}, {"datum", "date"}, {"year", "int"}, {"score", "number"}, {"aangenomen", "boolean"}, {"tags", "text[]"}}
	if err := s.EnsureProperties(ctx, from, props); err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"type": "motie", "datum": "2019-05-14T00:00:00Z", "year": int64(2019), "score": 7.5, "aangenomen": true, "tags": []string{"wind", "energie"}}
	var chunks []Chunk
	for i := range 3 {
		chunks = append(chunks, Chunk{DocID: "moties/2019/wind.md", Ordinal: i, End: 4, Text: "wind", Vector: unitVector(string(rune('a'+i)), 4),
			Properties: meta, MetaHash: "abc"})
	}
	if err := s.Upsert(ctx, from, chunks); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CopyCollection(ctx, from, to, 2, nil); err != nil {
		t.Fatal(err)
	}
	types, err := s.PropertyTypes(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range props {
		if types[p.Name] != p.DataType {
			t.Errorf("copy's property %s is %q, want %s", p.Name, types[p.Name], p.DataType)
		}
	}
	names := []string{"type", "datum", "year", "score", "aangenomen", "tags"}
	got, want := metadataOf(t, s, to, names...), metadataOf(t, s, from, names...)
	if len(got) != 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("copied metadata\n got %v\nwant %v", got, want)
	}
	if m := want[[2]any{"moties/2019/wind.md", 1}]; m["year"] != int64(2019) || m[PropMetaHash] != "abc" || !reflect.DeepEqual(m["tags"], []string{"wind", "energie"}) {
		t.Errorf("source chunk properties %v", m)
	}
}
