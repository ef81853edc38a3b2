package vectorstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/grpc/common"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"
)

// Mode is a retrieval mode. Its values are the API's (Evaluation.spec.mode), so an API
// value converts with Mode(v); the store does not import the API.
type Mode string

// Retrieval modes.
const (
	// ModeDense ranks chunks by vector distance to Query.Vector (Weaviate nearVector).
	ModeDense Mode = "Dense"
	// ModeBM25 ranks chunks by BM25 (Robertson & Zaragoza 2009) of Query.Text over the text property.
	ModeBM25 Mode = "BM25"
	// ModeHybrid fuses BM25 of Query.Text and vector similarity to Query.Vector, weighted by Alpha.
	ModeHybrid Mode = "Hybrid"
)

// Fusion is how hybrid search merges its BM25 and vector result lists. Its values are the
// API's (fusion), so an API value converts with Fusion(v).
type Fusion string

// Hybrid fusion methods (Weaviate's rankedFusion and relativeScoreFusion).
const (
	// FusionRanked adds 1/(60+rank) per list (reciprocal rank fusion, Cormack et al. 2009).
	FusionRanked Fusion = "RankedFusion"
	// FusionRelativeScore min-max normalises each list's scores, then adds them weighted by alpha.
	FusionRelativeScore Fusion = "RelativeScoreFusion"
)

// Query is one search. Limit is required (> 0).
type Query struct {
	Mode Mode
	// Vector is the query embedding (ModeDense, ModeHybrid).
	Vector []float32
	// Text is the keyword query (ModeBM25, ModeHybrid).
	Text string
	// Alpha weights hybrid search: 0 is pure BM25, 1 pure vector (ModeHybrid only).
	Alpha float32
	// Fusion picks the hybrid fusion; empty means FusionRelativeScore (Weaviate's default).
	Fusion Fusion
	// Limit is the maximum number of hits.
	Limit int
	// WithText also returns each hit's chunk text.
	WithText bool
	// EmbedText lets Weaviate embed Text with the collection's vectorizer (the model server
	// of a [Transformers] collection) instead of sending Vector: ModeDense runs as
	// nearText, ModeHybrid as hybrid without a vector. Vector must be empty. Through an alias
	// the query is embedded by the model of the collection the alias points at.
	EmbedText bool
	// Where restricts the search to the chunks it matches (a Weaviate where filter, e.g.
	// on metadata properties); nil matches all.
	Where *filters.WhereBuilder
	// Properties are further properties (metadata) returned in each Hit.Properties.
	Properties []string
	// Access, when set, returns only chunks readable by one of its groups (and each hit's
	// AccessGroups); a filter without groups is an error, never an unfiltered search.
	Access *AccessFilter
}

// Hit is one retrieved chunk, best first.
type Hit struct {
	// ID is the chunk's object ID ([ChunkID]).
	ID      string
	DocID   string
	Ordinal int
	// Start and End are the chunk's byte offsets in the document, [Start, End).
	Start, End         int
	HeadingPath        []string
	PageStart, PageEnd int
	// Revision is the Index revision of the collection that answered (through an alias this
	// tells which revision served the query).
	Revision string
	// Text is the chunk text when Query.WithText was set.
	Text string
	// Score is higher-is-better: BM25 score (ModeBM25), fused score (ModeHybrid), or
	// 1 - distance (ModeDense; the cosine similarity for cosine distance).
	Score float32
	// Distance is the vector distance (ModeDense only).
	Distance float32
	// Properties holds the Query.Properties the chunk has (string, []string, int64, float64,
	// bool; dates as RFC 3339 strings).
	Properties map[string]any
	// AccessGroups are the chunk's access groups (Query.Access set only).
	AccessGroups []string
}

func (q *Query) validate(target string) error {
	if q.Limit <= 0 {
		return fmt.Errorf("vectorstore: search %s: Limit %d: want > 0", target, q.Limit)
	}
	if q.EmbedText {
		switch {
		case q.Mode != ModeDense && q.Mode != ModeHybrid:
			return fmt.Errorf("vectorstore: search %s: EmbedText applies to %s and %s, not %s", target, ModeDense, ModeHybrid, q.Mode)
		case len(q.Vector) != 0:
			return fmt.Errorf("vectorstore: search %s: EmbedText with a Query.Vector: send one or the other", target)
		case q.Text == "":
			return fmt.Errorf("vectorstore: search %s: EmbedText needs Query.Text", target)
		}
	}
	switch q.Mode {
	case ModeDense:
		if len(q.Vector) == 0 && !q.EmbedText {
			return fmt.Errorf("vectorstore: search %s: nearVector needs Query.Vector", target)
		}
	case ModeBM25:
		if q.Text == "" {
			return fmt.Errorf("vectorstore: search %s: bm25 needs Query.Text", target)
		}
	case ModeHybrid:
		if q.Text == "" || (len(q.Vector) == 0 && !q.EmbedText) {
			return fmt.Errorf("vectorstore: search %s: hybrid needs Query.Text and Query.Vector", target)
		}
		if q.Alpha < 0 || q.Alpha > 1 {
			return fmt.Errorf("vectorstore: search %s: hybrid Alpha %v: want 0..1", target, q.Alpha)
		}
		switch q.Fusion {
		case "", FusionRanked, FusionRelativeScore:
		default:
			return fmt.Errorf("vectorstore: search %s: Fusion %q: want %s or %s", target, q.Fusion, FusionRanked, FusionRelativeScore)
		}
	default:
		return fmt.Errorf("vectorstore: search %s: Mode %q: want %s, %s or %s", target, q.Mode, ModeDense, ModeBM25, ModeHybrid)
	}
	return nil
}

// Search runs q over target, a collection or an alias, over gRPC, and returns at most q.Limit
// hits, best first. Searches are not retried (the caller decides; see [IsRetryable]).
//
// Errors: invalid query; [*DimensionError] when the query vector's length differs from the
// collection's; [*CollectionNotFoundError]; [*RetryableError]; [*ServerError].
func (s *Store) Search(ctx context.Context, target string, q Query) ([]Hit, error) {
	if err := q.validate(target); err != nil {
		return nil, err
	}
	props := []string{PropDocID, PropChunkOrdinal, PropStart, PropEnd, PropHeadingPath, PropRevision, PropPageStart, PropPageEnd}
	var access *filters.WhereBuilder
	if q.Access != nil {
		var err error
		if access, err = q.Access.where(target); err != nil {
			return nil, err
		}
		props = append(props, PropAccessGroups)
	}
	if q.WithText {
		props = append(props, PropText)
	}
	props = append(props, q.Properties...)
	// The request weaviate-go-client v5.7.3's graphql.Search builds (togrpc) for these
	// arguments, sent over the Store's own connection (searchconn.go).
	req := &pb.SearchRequest{
		Collection:       target,
		Limit:            uint32(q.Limit),
		ConsistencyLevel: common.GetConsistencyLevel(s.cfg.ReadConsistency),
		Properties:       &pb.PropertiesRequest{NonRefProperties: props},
		Metadata:         &pb.MetadataRequest{Uuid: true, Distance: q.Mode == ModeDense, Score: q.Mode != ModeDense},
		Uses_123Api:      true,
		Uses_125Api:      true,
		Uses_127Api:      true,
	}
	// The access filter is ANDed with the caller's where filter, never replaced by it: a
	// where filter cannot widen what the access groups allow.
	switch {
	case access != nil && q.Where != nil:
		req.Filters = filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{access, q.Where}).ToGRPC()
	case access != nil:
		req.Filters = access.ToGRPC()
	case q.Where != nil:
		req.Filters = q.Where.ToGRPC()
	}
	switch q.Mode {
	case ModeDense:
		if q.EmbedText {
			req.NearText = &pb.NearTextSearch{Query: []string{q.Text}}
		} else {
			req.NearVector = &pb.NearVector{Vectors: []*pb.Vectors{common.GetVector("", q.Vector)}}
		}
	case ModeBM25:
		req.Bm25Search = &pb.BM25{Query: q.Text, Properties: []string{PropText}}
	case ModeHybrid:
		alpha := q.Alpha
		h := &pb.Hybrid{Query: q.Text, Properties: []string{PropText}, Alpha: alpha, AlphaParam: &alpha, //nolint:staticcheck // Alpha for servers before 1.36
			FusionType: pb.Hybrid_FUSION_TYPE_RELATIVE_SCORE}
		if !q.EmbedText {
			h.Vectors = []*pb.Vectors{common.GetVector("", q.Vector)}
		}
		if q.Fusion == FusionRanked {
			h.FusionType = pb.Hybrid_FUSION_TYPE_RANKED
		}
		req.HybridSearch = h
	}
	reply, err := s.searchGRPC(ctx, req)
	if err != nil {
		err = classify("search", target, err)
		var de *DimensionError
		if errors.As(err, &de) {
			de.Actual = len(q.Vector)
			if de.Expected == 0 {
				de.Expected = s.dimensionsOf(ctx, target)
			}
		}
		return nil, err
	}
	res := reply.GetResults()
	hits := make([]Hit, len(res))
	for i, r := range res {
		h := &hits[i]
		p := r.GetProperties().GetNonRefProps().GetFields()
		h.ID = r.GetMetadata().GetId()
		h.DocID = p[PropDocID].GetTextValue()
		h.Revision = p[PropRevision].GetTextValue()
		h.Text = p[PropText].GetTextValue()
		h.Ordinal = intValue(p[PropChunkOrdinal])
		h.Start = intValue(p[PropStart])
		h.End = intValue(p[PropEnd])
		h.PageStart = intValue(p[PropPageStart])
		h.PageEnd = intValue(p[PropPageEnd])
		h.HeadingPath = p[PropHeadingPath].GetListValue().GetTextValues().GetValues()
		for _, name := range q.Properties {
			if v := valueOf(p[name]); v != nil {
				if h.Properties == nil {
					h.Properties = map[string]any{}
				}
				h.Properties[name] = v
			}
		}
		if access != nil {
			h.AccessGroups = p[PropAccessGroups].GetListValue().GetTextValues().GetValues()
		}
		if q.Mode == ModeDense {
			h.Distance = r.GetMetadata().GetDistance()
			h.Score = 1 - h.Distance
		} else {
			h.Score = r.GetMetadata().GetScore()
		}
	}
	return hits, nil
}

// dimensionsOf returns the recorded dimensions of a collection or of the collection behind an
// alias, 0 when unknown.
func (s *Store) dimensionsOf(ctx context.Context, target string) int {
	if info, err := s.Collection(ctx, target); err == nil {
		return info.Dimensions
	}
	if c, found, err := s.getAlias(ctx, target); err == nil && found {
		if info, err := s.Collection(ctx, c); err == nil {
			return info.Dimensions
		}
	}
	return 0
}

// valueOf returns a scalar or text-list property value as Go value, nil when absent.
func valueOf(v *pb.Value) any {
	switch x := v.GetKind().(type) {
	case *pb.Value_TextValue:
		return x.TextValue
	case *pb.Value_IntValue:
		return x.IntValue
	case *pb.Value_NumberValue:
		return x.NumberValue
	case *pb.Value_BoolValue:
		return x.BoolValue
	case *pb.Value_DateValue:
		return x.DateValue
	case *pb.Value_ListValue:
		if t := x.ListValue.GetTextValues(); t != nil {
			return t.GetValues()
		}
	}
	return nil
}

// intValue returns an int or number property's value, 0 when absent.
func intValue(v *pb.Value) int {
	switch x := v.GetKind().(type) {
	case *pb.Value_IntValue:
		return int(x.IntValue)
	case *pb.Value_NumberValue:
		return int(x.NumberValue)
	}
	return 0
}
