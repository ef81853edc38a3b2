package vectorstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"
)

// Property names of a chunk object.
const (
	PropText         = "text"         // chunk text; BM25-searchable, word tokenization
	PropDocID        = "docId"        // document id; filterable, field tokenization
	PropChunkOrdinal = "chunkOrdinal" // 0-based chunk number within the document; range-filterable
	PropStart        = "start"        // byte offset of the chunk's first byte in the document text
	PropEnd          = "end"          // byte offset one past the chunk's last byte
	PropHeadingPath  = "headingPath"  // enclosing headings, outermost first
	PropRevision     = "revision"     // Index revision that wrote the chunk
	PropPageStart    = "pageStart"    // first page (1-based) for paged formats, 0 if unknown
	PropPageEnd      = "pageEnd"      // last page (1-based) for paged formats, 0 if unknown
	PropDocHash      = "docHash"      // content hash of the whole document, for incremental sync
)

// Vector index types.
const (
	IndexHNSW = "hnsw" // approximate, graph-based (Malkov & Yashunin 2016)
	IndexFlat = "flat" // exact brute force; fast to import, linear query cost
)

// Distance metrics Weaviate supports.
const (
	DistanceCosine    = "cosine"
	DistanceDot       = "dot"
	DistanceL2Squared = "l2-squared"
)

// VectorIndex holds the vector index settings of a revision collection (from the Index spec).
// Zero numeric values leave Weaviate's defaults (efConstruction 128, maxConnections 32, ef -1
// meaning dynamic).
type VectorIndex struct {
	// Type is IndexHNSW (default) or IndexFlat.
	Type string `json:"type"`
	// Distance is DistanceCosine (default), DistanceDot or DistanceL2Squared.
	Distance string `json:"distance"`
	// EfConstruction is the HNSW build-time candidate list size (HNSW only).
	EfConstruction int `json:"efConstruction,omitempty"`
	// MaxConnections is the HNSW maximum out-degree per node and layer (HNSW only).
	MaxConnections int `json:"maxConnections,omitempty"`
	// Ef is the HNSW query-time candidate list size; -1 means dynamic (HNSW only).
	Ef int `json:"ef,omitempty"`
}

// CollectionSpec describes one revision collection.
type CollectionSpec struct {
	// Name is the collection name, normally from [CollectionName].
	Name string
	// Revision is the Index revision; it is part of every chunk's ID ([ChunkID]) and stored on
	// every chunk.
	Revision string
	// Dimensions is the embedding length; upserts and queries with other lengths fail with
	// [*DimensionError].
	Dimensions int
	// Index holds the vector index settings.
	Index VectorIndex
}

// CollectionInfo is what a revision collection records about itself (in its description).
type CollectionInfo struct {
	Name       string      `json:"-"`
	Revision   string      `json:"revision"`
	Dimensions int         `json:"dimensions"`
	Index      VectorIndex `json:"index"`
}

const descriptionPrefix = "ragops revision collection "

func (spec *CollectionSpec) validate() error {
	if err := ValidateName(spec.Name); err != nil {
		return err
	}
	if spec.Revision == "" {
		return fmt.Errorf("collection %s: Revision is empty", spec.Name)
	}
	if spec.Dimensions <= 0 {
		return fmt.Errorf("collection %s: Dimensions %d: want > 0", spec.Name, spec.Dimensions)
	}
	ix := &spec.Index
	if ix.Type == "" {
		ix.Type = IndexHNSW
	}
	if ix.Distance == "" {
		ix.Distance = DistanceCosine
	}
	switch ix.Type {
	case IndexHNSW:
	case IndexFlat:
		if ix.EfConstruction != 0 || ix.MaxConnections != 0 || ix.Ef != 0 {
			return fmt.Errorf("collection %s: efConstruction, maxConnections and ef apply to hnsw only, index type is flat", spec.Name)
		}
	default:
		return fmt.Errorf("collection %s: vector index type %q: want %s or %s", spec.Name, ix.Type, IndexHNSW, IndexFlat)
	}
	switch ix.Distance {
	case DistanceCosine, DistanceDot, DistanceL2Squared:
	default:
		return fmt.Errorf("collection %s: distance %q: want %s, %s or %s", spec.Name, ix.Distance, DistanceCosine, DistanceDot, DistanceL2Squared)
	}
	if ix.EfConstruction < 0 || ix.MaxConnections < 0 || ix.Ef < -1 {
		return fmt.Errorf("collection %s: efConstruction %d, maxConnections %d, ef %d: want >= 0 (ef >= -1)", spec.Name, ix.EfConstruction, ix.MaxConnections, ix.Ef)
	}
	return nil
}

func boolp(b bool) *bool { return &b }

func (spec *CollectionSpec) class() *models.Class {
	info := CollectionInfo{Revision: spec.Revision, Dimensions: spec.Dimensions, Index: spec.Index}
	desc, _ := json.Marshal(info)
	vic := map[string]any{"distance": spec.Index.Distance}
	if spec.Index.EfConstruction > 0 {
		vic["efConstruction"] = spec.Index.EfConstruction
	}
	if spec.Index.MaxConnections > 0 {
		vic["maxConnections"] = spec.Index.MaxConnections
	}
	if spec.Index.Ef != 0 {
		vic["ef"] = spec.Index.Ef
	}
	field := func(name, dataType string, filterable, rangeable bool) *models.Property {
		p := &models.Property{Name: name, DataType: []string{dataType}, IndexFilterable: boolp(filterable), IndexSearchable: boolp(false)}
		if rangeable {
			p.IndexRangeFilters = boolp(true)
		}
		if dataType == "text" || dataType == "text[]" {
			p.Tokenization = "field"
		}
		return p
	}
	return &models.Class{
		Class:             spec.Name,
		Description:       descriptionPrefix + string(desc),
		Vectorizer:        "none",
		VectorIndexType:   spec.Index.Type,
		VectorIndexConfig: vic,
		Properties: []*models.Property{
			{Name: PropText, DataType: []string{"text"}, Tokenization: "word", IndexSearchable: boolp(true), IndexFilterable: boolp(false)},
			field(PropDocID, "text", true, false),
			field(PropChunkOrdinal, "int", true, true),
			field(PropStart, "int", false, false),
			field(PropEnd, "int", false, false),
			{Name: PropHeadingPath, DataType: []string{"text[]"}, Tokenization: "word", IndexSearchable: boolp(false), IndexFilterable: boolp(true)},
			field(PropRevision, "text", true, false),
			field(PropPageStart, "int", false, false),
			field(PropPageEnd, "int", false, false),
			field(PropDocHash, "text", false, false),
		},
	}
}

// EnsureCollection creates the revision collection described by spec, or does nothing when a
// collection of that name already records the same revision, dimensions and index settings
// (many embedder pods call it concurrently; creation races are absorbed).
//
// Errors: invalid spec; an existing collection with other settings ([*ServerError]); typed
// server errors.
func (s *Store) EnsureCollection(ctx context.Context, spec CollectionSpec) error {
	if err := spec.validate(); err != nil {
		return fmt.Errorf("vectorstore: %w", err)
	}
	want := CollectionInfo{Name: spec.Name, Revision: spec.Revision, Dimensions: spec.Dimensions, Index: spec.Index}
	err := s.retry(ctx, func() error {
		err := s.client.Schema().ClassCreator().WithClass(spec.class()).Do(ctx)
		if err != nil && !isAlreadyExists(err) {
			return classify("create collection", spec.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	got, err := s.fetchInfo(ctx, spec.Name)
	if err != nil {
		return err
	}
	if got != want {
		return &ServerError{Op: "create collection", Collection: spec.Name,
			Err: fmt.Errorf("exists with other settings: have %+v, want %+v", got, want)}
	}
	return nil
}

// Collection returns what the revision collection name records (revision, dimensions, index
// settings). Results are cached per Store.
//
// Errors: [*CollectionNotFoundError]; [*ServerError] when name is not a ragops collection.
func (s *Store) Collection(ctx context.Context, name string) (CollectionInfo, error) {
	s.mu.Lock()
	info, ok := s.infos[name]
	s.mu.Unlock()
	if ok {
		return info, nil
	}
	return s.fetchInfo(ctx, name)
}

// CollectionExists asks the server (not the cache) whether collection name exists.
//
// Errors: typed server and network errors; a missing collection is (false, nil).
func (s *Store) CollectionExists(ctx context.Context, name string) (bool, error) {
	_, err := s.fetchInfo(ctx, name)
	var nf *CollectionNotFoundError
	if errors.As(err, &nf) {
		return false, nil
	}
	return err == nil, err
}

func (s *Store) forget(name string) {
	s.mu.Lock()
	delete(s.infos, name)
	s.mu.Unlock()
}

func (s *Store) fetchInfo(ctx context.Context, name string) (CollectionInfo, error) {
	var class *models.Class
	err := s.retry(ctx, func() error {
		var err error
		class, err = s.client.Schema().ClassGetter().WithClassName(name).Do(ctx)
		if err != nil {
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				s.forget(name)
				return &CollectionNotFoundError{Op: "get collection", Collection: name}
			}
			return classify("get collection", name, err)
		}
		return nil
	})
	if err != nil {
		return CollectionInfo{}, err
	}
	raw, ok := strings.CutPrefix(class.Description, descriptionPrefix)
	var info CollectionInfo
	if !ok || json.Unmarshal([]byte(raw), &info) != nil {
		return CollectionInfo{}, &ServerError{Op: "get collection", Collection: name,
			Err: fmt.Errorf("not a ragops revision collection (description %q)", class.Description)}
	}
	info.Name = name
	s.mu.Lock()
	s.infos[name] = info
	s.mu.Unlock()
	return info, nil
}

// ListCollections returns the names of all collections whose names start with prefix
// (e.g. an [AliasName] to list one Index's revisions), sorted.
func (s *Store) ListCollections(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	err := s.retry(ctx, func() error {
		sch, err := s.client.Schema().Getter().Do(ctx)
		if err != nil {
			return classify("list collections", prefix, err)
		}
		names = names[:0]
		for _, c := range sch.Classes {
			if strings.HasPrefix(c.Class, prefix) {
				names = append(names, c.Class)
			}
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

// DeleteCollection deletes a revision collection and all its chunks, but only when no alias
// points at it. Deleting a missing collection is not an error.
//
// Errors: [*CollectionInUseError] naming the aliases; typed server errors. An alias created
// between the check and the delete is not detected (Weaviate has no conditional delete).
func (s *Store) DeleteCollection(ctx context.Context, name string) error {
	aliases, err := s.AliasesOf(ctx, name)
	if err != nil {
		return err
	}
	if len(aliases) > 0 {
		return &CollectionInUseError{Collection: name, Aliases: aliases}
	}
	err = s.retry(ctx, func() error {
		err := s.client.Schema().ClassDeleter().WithClassName(name).Do(ctx)
		if err != nil {
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				return nil
			}
			return classify("delete collection", name, err)
		}
		return nil
	})
	s.forget(name)
	return err
}
