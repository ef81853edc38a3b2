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
	// PropAccessGroups are the groups that may read the chunk's document (package access);
	// filterable, field tokenization (a group matches whole). The query endpoint filters on it.
	PropAccessGroups = "accessGroups"
	// PropAccessKey is the key of the access rules the groups were computed under
	// (access.Key), for sync; "" when the Corpus has no access rules.
	PropAccessKey = "accessKey"
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
	// Compression quantizes the vectors the index searches; zero means none.
	Compression Compression `json:"compression,omitzero"`
}

// Vector compression (quantizer) types, as Weaviate 1.37 names them in vectorIndexConfig.
const (
	// CompressionNone keeps float32 vectors (4 bytes per dimension).
	CompressionNone = ""
	// CompressionPQ is product quantization (Jégou et al. 2011): Segments sub-vectors of
	// 1 byte each after training a codebook on TrainingLimit vectors per shard (HNSW only).
	CompressionPQ = "pq"
	// CompressionBQ is binary quantization: 1 bit per dimension (sign), 32x smaller.
	CompressionBQ = "bq"
	// CompressionSQ is scalar quantization: 1 byte per dimension after learning the value range
	// from TrainingLimit vectors per shard (HNSW only).
	CompressionSQ = "sq"
	// CompressionRQ is rotational quantization: a random rotation, then Bits (8 or 1) per
	// dimension; no training.
	CompressionRQ = "rq"
)

// Compression holds a vector index's quantizer. Zero numeric fields leave Weaviate's
// defaults (RQ bits 8, PQ segments from the dimensions, training limit 100,000, rescore limit
// chosen by Weaviate).
type Compression struct {
	// Type is one of CompressionNone, CompressionPQ, CompressionBQ, CompressionSQ, CompressionRQ.
	Type string `json:"type,omitempty"`
	// Bits per dimension of RQ: 8 or 1.
	Bits int `json:"bits,omitempty"`
	// Segments of PQ; must divide the dimensions.
	Segments int `json:"segments,omitempty"`
	// TrainingLimit is the number of vectors per shard collected before PQ or SQ trains and
	// compresses; until then vectors stay uncompressed.
	TrainingLimit int `json:"trainingLimit,omitempty"`
	// RescoreLimit is how many candidates found with compressed vectors are re-ranked with
	// the uncompressed ones (SQ, RQ; BQ on a flat index).
	RescoreLimit int `json:"rescoreLimit,omitempty"`
}

// Replication holds the replication settings of a collection.
type Replication struct {
	// Factor is the number of copies of each shard, on different nodes; 0 means 1.
	Factor int `json:"factor,omitempty"`
	// AsyncEnabled turns on Weaviate's asynchronous replication: replicas compare hash trees in
	// the background and repair objects one of them missed (e.g. while its node was down).
	AsyncEnabled bool `json:"asyncEnabled,omitempty"`
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
	// Replication is the replication factor and async repair; zero means one copy.
	Replication Replication
	// Shards is the desired number of shards; 0 leaves Weaviate's default (one per node).
	Shards int
	// Vectorizer wires the collection to a model server (ragops serve) through Weaviate's
	// text2vec-transformers module, so that nearText and hybrid queries with text only are
	// embedded by the revision's own model; zero means vectorizer none.
	Vectorizer Transformers
}

// ModuleTransformers is the Weaviate module that calls a model server's /vectors endpoint;
// the server must list it in ENABLE_MODULES (and set TRANSFORMERS_INFERENCE_API, or both
// TRANSFORMERS_PASSAGE_INFERENCE_API and TRANSFORMERS_QUERY_INFERENCE_API: Weaviate v1.37.6
// refuses to start the module without them even when every collection names its own URLs).
const ModuleTransformers = "text2vec-transformers"

// Transformers is a collection's text2vec-transformers setting (Weaviate v1.37.6
// modules/text2vec-transformers/vectorizer/class_settings.go): the model server URLs that
// embed objects without a vector (passageInferenceUrl) and query text (queryInferenceUrl),
// and the poolingStrategy sent with every request. Objects imported with a vector are not
// re-vectorised.
type Transformers struct {
	// PassageURL and QueryURL are base URLs (Weaviate appends /vectors); both or neither.
	PassageURL string `json:"passageUrl,omitempty"`
	QueryURL   string `json:"queryUrl,omitempty"`
	// Pooling is "masked_mean" (default) or "cls"; ragops serve refuses one that differs from
	// its model's pooling.
	Pooling string `json:"pooling,omitempty"`
}

// TransformersPooling maps a model folder's pooling ("mean", "cls") to the module's
// poolingStrategy ("masked_mean", "cls").
func TransformersPooling(pooling string) string {
	if pooling == "cls" {
		return "cls"
	}
	return "masked_mean"
}

func (t *Transformers) validate() error {
	if *t == (Transformers{}) {
		return nil
	}
	if t.PassageURL == "" || t.QueryURL == "" {
		return fmt.Errorf("vectorizer %s needs both a passage and a query URL, have %q and %q", ModuleTransformers, t.PassageURL, t.QueryURL)
	}
	if t.Pooling == "" {
		t.Pooling = TransformersPooling("")
	}
	if t.Pooling != "masked_mean" && t.Pooling != "cls" {
		return fmt.Errorf("vectorizer %s: pooling %q: want masked_mean or cls", ModuleTransformers, t.Pooling)
	}
	return nil
}

// CollectionInfo is what a revision collection records about itself (in its description).
type CollectionInfo struct {
	Name        string      `json:"-"`
	Revision    string      `json:"revision"`
	Dimensions  int         `json:"dimensions"`
	Index       VectorIndex `json:"index"`
	Replication Replication `json:"replication,omitzero"`
	Shards      int         `json:"shards,omitempty"`
	// Vectorizer is the text2vec-transformers wiring, zero for vectorizer none.
	Vectorizer Transformers `json:"vectorizer,omitzero"`
	// AccessProperties is true when the collection has PropAccessGroups (text[], field
	// tokenization, filterable) and PropAccessKey: every collection created since issue 52.
	// An older one cannot hold access groups; it is not recorded in the description.
	AccessProperties bool `json:"-"`
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
	if err := ix.Compression.validate(ix.Type, spec.Dimensions); err != nil {
		return fmt.Errorf("collection %s: %w", spec.Name, err)
	}
	if spec.Replication.Factor < 0 || spec.Shards < 0 {
		return fmt.Errorf("collection %s: replication factor %d, shards %d: want >= 0", spec.Name, spec.Replication.Factor, spec.Shards)
	}
	if spec.Replication.Factor == 1 {
		spec.Replication.Factor = 0 // recorded like the default
	}
	if err := spec.Vectorizer.validate(); err != nil {
		return fmt.Errorf("collection %s: %w", spec.Name, err)
	}
	return nil
}

// validate checks the quantizer against the index type (Weaviate 1.37: flat supports BQ and RQ
// only) and its parameters against the type.
func (c *Compression) validate(indexType string, dims int) error {
	switch c.Type {
	case CompressionNone:
		if *c != (Compression{}) {
			return errors.New("compression parameters set without a compression type")
		}
		return nil
	case CompressionPQ, CompressionSQ:
		if indexType == IndexFlat {
			return fmt.Errorf("compression %s needs an hnsw index (flat supports bq and rq)", c.Type)
		}
	case CompressionBQ, CompressionRQ:
	default:
		return fmt.Errorf("compression type %q: want pq, bq, sq or rq", c.Type)
	}
	switch {
	case c.Bits != 0 && (c.Type != CompressionRQ || (c.Bits != 1 && c.Bits != 8)):
		return fmt.Errorf("compression %s: bits %d: only rq takes bits, 8 or 1", c.Type, c.Bits)
	case c.Segments != 0 && (c.Type != CompressionPQ || c.Segments < 0 || dims%c.Segments != 0):
		return fmt.Errorf("compression %s: segments %d: only pq takes segments, a divisor of the %d dimensions", c.Type, c.Segments, dims)
	case c.TrainingLimit != 0 && (c.Type != CompressionPQ && c.Type != CompressionSQ || c.TrainingLimit < 0):
		return fmt.Errorf("compression %s: trainingLimit %d: only pq and sq train, want > 0", c.Type, c.TrainingLimit)
	case c.RescoreLimit != 0 && (c.Type == CompressionPQ || c.Type == CompressionBQ && indexType != IndexFlat || c.RescoreLimit < 0):
		return fmt.Errorf("compression %s: rescoreLimit %d: only sq, rq and bq on a flat index rescore, want > 0", c.Type, c.RescoreLimit)
	}
	return nil
}

// config returns the quantizer's vectorIndexConfig entry (key and value), ok false for none.
func (c *Compression) config() (key string, value map[string]any, ok bool) {
	if c.Type == CompressionNone {
		return "", nil, false
	}
	v := map[string]any{"enabled": true}
	if c.Bits != 0 {
		v["bits"] = c.Bits
	}
	if c.Segments != 0 {
		v["segments"] = c.Segments
	}
	if c.TrainingLimit != 0 {
		v["trainingLimit"] = c.TrainingLimit
	}
	if c.RescoreLimit != 0 {
		v["rescoreLimit"] = c.RescoreLimit
	}
	return c.Type, v, true
}

// info is what the collection records about itself.
func (spec *CollectionSpec) info() CollectionInfo {
	return CollectionInfo{Revision: spec.Revision, Dimensions: spec.Dimensions, Index: spec.Index,
		Replication: spec.Replication, Shards: spec.Shards, Vectorizer: spec.Vectorizer, AccessProperties: true}
}

func boolp(b bool) *bool { return &b }

func (spec *CollectionSpec) class() *models.Class {
	info := spec.info()
	desc, _ := json.Marshal(info)
	vic := map[string]any{"distance": spec.Index.Distance}
	if key, v, ok := spec.Index.Compression.config(); ok {
		vic[key] = v
	} else {
		// Servers started with DEFAULT_QUANTIZATION would quantize anyway; none means none.
		vic["skipDefaultQuantization"] = true
	}
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
	var repl *models.ReplicationConfig
	if spec.Replication != (Replication{}) {
		repl = &models.ReplicationConfig{Factor: int64(max(spec.Replication.Factor, 1)), AsyncEnabled: spec.Replication.AsyncEnabled}
	}
	var sharding any
	if spec.Shards > 0 {
		sharding = map[string]any{"desiredCount": spec.Shards}
	}
	class := &models.Class{
		Class:             spec.Name,
		ReplicationConfig: repl,
		ShardingConfig:    sharding,
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
			field(PropAccessGroups, "text[]", true, false),
			field(PropAccessKey, "text", false, false),
		},
	}
	if v := spec.Vectorizer; v != (Transformers{}) {
		class.Vectorizer = ModuleTransformers
		class.ModuleConfig = map[string]any{ModuleTransformers: map[string]any{
			"passageInferenceUrl": v.PassageURL, "queryInferenceUrl": v.QueryURL,
			"poolingStrategy": v.Pooling, "vectorizeClassName": false,
		}}
		// An object imported without a vector is embedded from its chunk text alone, as the
		// build embeds it.
		for _, p := range class.Properties {
			p.ModuleConfig = map[string]any{ModuleTransformers: map[string]any{
				"skip": p.Name != PropText, "vectorizePropertyName": false,
			}}
		}
	}
	return class
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
	want := spec.info()
	want.Name = spec.Name
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
	// A collection from before the access properties keeps working (without access groups).
	got.AccessProperties = want.AccessProperties
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
	info.AccessProperties = hasAccessProperties(class)
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
// points at it, and its document manifest first ([ManifestName]). Deleting a missing
// collection is not an error.
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
	if strings.HasPrefix(name, "Rag_") { // a revision collection (not a cache or a manifest)
		if err := s.DeleteManifest(ctx, name); err != nil {
			return err
		}
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

// hasAccessProperties reports whether class has the access properties as this package
// creates them: accessGroups text[] with field tokenization, filterable, and accessKey.
func hasAccessProperties(class *models.Class) bool {
	var groups, key bool
	for _, p := range class.Properties {
		switch p.Name {
		case PropAccessGroups:
			groups = len(p.DataType) == 1 && p.DataType[0] == "text[]" && p.Tokenization == "field" &&
				p.IndexFilterable != nil && *p.IndexFilterable
		case PropAccessKey:
			key = true
		}
	}
	return groups && key
}
