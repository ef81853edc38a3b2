package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// PropMetaHash holds, on every chunk of a collection with metadata properties, the hash of
// the document's declared metadata inputs (pipeline/docmeta): a sync whose document hash is
// unchanged but whose metadata hash differs rewrites the properties without embedding.
const PropMetaHash = "metaHash"

// Property is a document metadata property of a revision collection: a Weaviate property
// name and data type (text, text[], int, number, boolean, date).
type Property struct {
	Name     string
	DataType string
}

// property returns the schema of a metadata property: filterable, range-filterable for
// int, number and date, text kept whole (field tokenization) and not BM25-searched.
func (p Property) property() *models.Property {
	mp := &models.Property{Name: p.Name, DataType: []string{p.DataType}, IndexFilterable: boolp(true), IndexSearchable: boolp(false)}
	switch p.DataType {
	case "int", "number", "date":
		mp.IndexRangeFilters = boolp(true)
	case "text", "text[]":
		mp.Tokenization = "field"
	}
	return mp
}

// EnsureProperties adds the metadata properties props, and PropMetaHash, to collection
// where it does not have them yet (a Corpus may declare fields after its Index was built).
// A property with a vectorizer wired is skipped by it, as every property but the text is.
//
// Errors: [*CollectionNotFoundError]; a property of the same name with another data type
// (Weaviate cannot change one: declare the field under another name, or rebuild); typed
// server errors.
func (s *Store) EnsureProperties(ctx context.Context, collection string, props []Property) error {
	if len(props) == 0 {
		return nil
	}
	if _, err := s.Collection(ctx, collection); err != nil {
		return err
	}
	var class *models.Class
	err := s.retry(ctx, func() error {
		var err error
		class, err = s.client.Schema().ClassGetter().WithClassName(collection).Do(ctx)
		return classify("get collection", collection, err)
	})
	if err != nil {
		return err
	}
	have := map[string][]string{}
	for _, p := range class.Properties {
		have[p.Name] = p.DataType
	}
	want := append([]Property{{Name: PropMetaHash, DataType: "text"}}, props...)
	for _, p := range want {
		if dt, ok := have[p.Name]; ok {
			if !slices.Equal(dt, []string{p.DataType}) {
				return &ServerError{Op: "add property", Collection: collection,
					Err: fmt.Errorf("property %s exists with data type %v, want %s: Weaviate cannot change it; rename the field or rebuild the Index", p.Name, dt, p.DataType)}
			}
			continue
		}
		mp := p.property()
		if p.Name == PropMetaHash {
			mp.IndexFilterable, mp.IndexRangeFilters = boolp(false), nil
		}
		if class.Vectorizer == ModuleTransformers {
			mp.ModuleConfig = map[string]any{ModuleTransformers: map[string]any{"skip": true, "vectorizePropertyName": false}}
		}
		err := s.retry(ctx, func() error {
			err := s.client.Schema().PropertyCreator().WithClassName(collection).WithProperty(mp).Do(ctx)
			if err != nil && !isAlreadyExists(err) {
				return classify("add property", collection, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DocumentMetaHashes returns the PropMetaHash of every document with chunks in collection
// that keep accepts (nil: all), "" when its chunks carry none or disagree. It pages like
// [Store.DocumentStates]. The collection must have the property ([Store.EnsureProperties]).
func (s *Store) DocumentMetaHashes(ctx context.Context, collection string, pageSize int, keep func(docID string) bool) (map[string]string, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	out := map[string]string{}
	err := s.pageProperties(ctx, collection, pageSize, []string{PropDocID, PropMetaHash}, func(p map[string]any) {
		id, _ := p[PropDocID].(string)
		if keep != nil && !keep(id) {
			return
		}
		h, _ := p[PropMetaHash].(string)
		if old, ok := out[id]; ok && old != h {
			h = ""
		}
		out[id] = h
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DocumentProperties are the metadata properties of one document's chunks.
type DocumentProperties struct {
	// Chunks is how many chunks the document has (its read is limited to them).
	Chunks int
	// Properties are the metadata properties' values (Chunk.Properties).
	Properties map[string]any
	// MetaHash is stored as PropMetaHash.
	MetaHash string
}

// UpdateProperties replaces, on every chunk of each document of docs (document ID -> its
// properties), the metadata properties named in names with the document's Properties (a
// name without a value is removed) and its PropMetaHash, keeping the text, the span, the
// vector and every other property: it reads the chunks with their vectors (one filtered read
// per batch of documents) and writes them back under the same IDs (Upsert). Nothing is
// embedded.
//
// Errors: those of the read and of [Store.Upsert]; a chunk read without its vector.
func (s *Store) UpdateProperties(ctx context.Context, collection string, names []string, docs map[string]DocumentProperties) error {
	info, err := s.Collection(ctx, collection)
	if err != nil {
		return err
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range docs {
			if !yield(id) {
				return
			}
		}
	})
	for lo := 0; lo < len(ids); {
		// Batches of documents up to about 1000 chunks (at least one document).
		hi, n := lo, 0
		for hi < len(ids) && (hi == lo || n+docs[ids[hi]].Chunks <= 1000) && hi-lo < DeleteBatchDocuments {
			n += docs[ids[hi]].Chunks
			hi++
		}
		batch := ids[lo:hi]
		lo = hi
		var res []graphql.SearchResult
		err := s.retry(ctx, func() error {
			var err error
			res, err = s.client.Experimental().Search().WithCollection(collection).WithLimit(n + 1).
				WithWhere(docsFilter(batch)).WithMetadata(&graphql.Metadata{ID: true, Vector: true}).Do(ctx)
			return classify("update properties", collection, err)
		})
		if err != nil {
			return err
		}
		chunks := make([]Chunk, 0, len(res))
		for _, r := range res {
			c, err := chunkOf(r, names)
			if err != nil {
				return &ServerError{Op: "update properties", Collection: collection, Err: err}
			}
			d := docs[c.DocID]
			for _, name := range names {
				if v, ok := d.Properties[name]; ok {
					c.Properties[name] = v
				}
			}
			c.MetaHash = d.MetaHash
			chunks = append(chunks, c)
		}
		if err := s.Upsert(ctx, info.Name, chunks); err != nil {
			return err
		}
	}
	return nil
}

// ownProperty reports whether name is one of ragops's own chunk properties (the others
// are metadata).
func ownProperty(name string) bool {
	switch name {
	case PropText, PropDocID, PropChunkOrdinal, PropStart, PropEnd, PropHeadingPath, PropRevision,
		PropPageStart, PropPageEnd, PropDocHash, PropMetaHash, PropAccessGroups, PropAccessKey:
		return true
	}
	return false
}

// chunkOf rebuilds a chunk read with all its properties and its vector; the properties that
// are not ragops's own go into Properties, except those named in drop and PropMetaHash.
func chunkOf(r graphql.SearchResult, drop []string) (Chunk, error) {
	p := r.Properties
	c := Chunk{Ordinal: intProp(p[PropChunkOrdinal]), Start: intProp(p[PropStart]), End: intProp(p[PropEnd]),
		PageStart: intProp(p[PropPageStart]), PageEnd: intProp(p[PropPageEnd]), Vector: r.Vector, Properties: map[string]any{}}
	c.DocID, _ = p[PropDocID].(string)
	c.Text, _ = p[PropText].(string)
	c.DocHash, _ = p[PropDocHash].(string)
	if lv, ok := p[PropHeadingPath].(*pb.ListValue); ok {
		c.HeadingPath = lv.GetTextValues().GetValues()
	}
	// Access groups travel with the chunk: a copy or a properties update serves the same
	// documents to the same groups.
	c.AccessKey, _ = p[PropAccessKey].(string)
	if lv, ok := p[PropAccessGroups].(*pb.ListValue); ok && c.AccessKey != "" {
		c.AccessGroups = lv.GetTextValues().GetValues()
	}
	if len(c.Vector) == 0 {
		return c, fmt.Errorf("object %s came without its vector", r.ID)
	}
	for k, v := range p {
		if ownProperty(k) || slices.Contains(drop, k) {
			continue
		}
		switch x := v.(type) {
		case nil, structpb.NullValue:
		case *pb.ListValue:
			switch {
			case x.GetTextValues() != nil:
				c.Properties[k] = x.GetTextValues().GetValues()
			case x.GetBoolValues() != nil:
				c.Properties[k] = x.GetBoolValues().GetValues()
			case x.GetDateValues() != nil:
				c.Properties[k] = x.GetDateValues().GetValues()
			default:
				return c, fmt.Errorf("object %s: list property %s of a kind the update cannot keep", r.ID, k)
			}
		default:
			c.Properties[k] = x
		}
	}
	return c, nil
}

// PropertyTypes returns the data types of the properties of target, a collection or an
// alias (the collection it points at): name -> Weaviate data type (text, text[], int,
// number, boolean, date, ...). A where filter needs them to type its values.
//
// Errors: [*CollectionNotFoundError] when target is neither; typed server errors.
func (s *Store) PropertyTypes(ctx context.Context, target string) (map[string]string, error) {
	name := target
	if c, found, err := s.GetAlias(ctx, target); err != nil {
		return nil, err
	} else if found {
		name = c
	}
	var class *models.Class
	err := s.retry(ctx, func() error {
		var err error
		class, err = s.client.Schema().ClassGetter().WithClassName(name).Do(ctx)
		if err != nil {
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				return &CollectionNotFoundError{Op: "get collection", Collection: target}
			}
			return classify("get collection", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(class.Properties))
	for _, p := range class.Properties {
		if len(p.DataType) == 1 {
			out[p.Name] = p.DataType[0]
		}
	}
	return out, nil
}
