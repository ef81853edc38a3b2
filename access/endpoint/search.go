package endpoint

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	accessspecs "github.com/ragops/ragops/access/specs"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/query/expand"
	"github.com/ragops/ragops/vectorstore"
)

// Target is where one Index is searched: its alias on its Weaviate.
type Target struct {
	Alias string
	Store *vectorstore.Store
}

// Resolver finds an Index's Target.
type Resolver interface {
	// Resolve returns the Target of Index name. Errors: *NotServedError when the endpoint
	// does not serve it (404); others (503).
	Resolve(ctx context.Context, name string) (Target, error)
}

// NotServedError is an Index the endpoint does not serve: it does not exist, or its Corpus
// has no access rules (its chunks carry no groups).
type NotServedError struct{ Index, Reason string }

func (e *NotServedError) Error() string { return fmt.Sprintf("index %s: %s", e.Index, e.Reason) }

// KubeResolver resolves Indexes of one namespace through the Kubernetes API (query.Resolve:
// alias, Weaviate URL, API key, CA bundle) and serves only those whose Corpus has
// spec.access. It searches with the read-only Weaviate key in the Index's
// accessspecs.ReaderSecret when the operator provisioned one (Weaviate with RBAC), else with
// the Index's own key. Resolutions are kept TTL (default 10 s); stores are shared per endpoint.
type KubeResolver struct {
	Client    client.Reader
	Namespace string
	TTL       time.Duration

	mu     sync.Mutex
	cache  map[string]cached
	stores map[string]*vectorstore.Store
}

type cached struct {
	t  Target
	at time.Time
}

// Resolve implements Resolver.
func (k *KubeResolver) Resolve(ctx context.Context, name string) (Target, error) {
	ttl := k.TTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	k.mu.Lock()
	if c, ok := k.cache[name]; ok && time.Since(c.at) < ttl {
		k.mu.Unlock()
		return c.t, nil
	}
	k.mu.Unlock()
	var idx ragopsv1alpha1.Index
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, &idx); err != nil {
		if apierrors.IsNotFound(err) {
			return Target{}, &NotServedError{Index: name, Reason: "not found"}
		}
		return Target{}, err
	}
	var c ragopsv1alpha1.Corpus
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: idx.Spec.CorpusRef.Name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return Target{}, &NotServedError{Index: name, Reason: "its Corpus is not found"}
		}
		return Target{}, err
	}
	if c.Spec.Access == nil {
		return Target{}, &NotServedError{Index: name, Reason: fmt.Sprintf("Corpus %s has no spec.access", c.Name)}
	}
	qt, err := query.Resolve(ctx, k.Client, k.Namespace, name)
	if err != nil {
		return Target{}, err
	}
	// The read-only key the operator provisioned on a Weaviate with RBAC, when there is one.
	var sec corev1.Secret
	switch err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: accessspecs.ReaderSecret(name)}, &sec); {
	case err == nil && len(sec.Data[accessspecs.ReaderSecretKey]) > 0:
		qt.Store.APIKey = string(sec.Data[accessspecs.ReaderSecretKey])
	case err != nil && !apierrors.IsNotFound(err):
		return Target{}, err
	}
	key := fmt.Sprintf("%s|%s|%s|%x", qt.Store.HTTPHost, qt.Store.GRPCHost, qt.Store.APIKey, qt.Store.CABundle)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stores == nil {
		k.stores, k.cache = map[string]*vectorstore.Store{}, map[string]cached{}
	}
	s, ok := k.stores[key]
	if !ok {
		if s, err = vectorstore.New(qt.Store); err != nil {
			return Target{}, err
		}
		k.stores[key] = s
	}
	t := Target{Alias: qt.Alias, Store: s}
	k.cache[name] = cached{t: t, at: time.Now()}
	return t, nil
}

// Request is one search.
type Request struct {
	// Query is the text: embedded by the revision's model server for dense and hybrid.
	Query string `json:"query"`
	// Mode is dense, bm25 or hybrid (any case); default hybrid.
	Mode string `json:"mode,omitempty"`
	// K is the number of chunks (1..MaxK); default 10.
	K int `json:"k,omitempty"`
	// Alpha weighs hybrid (1 dense, 0 BM25); default 0.5.
	Alpha *float32 `json:"alpha,omitempty"`
	// Neighbours returns with each hit the chunks of its document within this many ordinals
	// of it, itself included (small-to-big; 0..MaxNeighbours), under the same access filter.
	Neighbours int `json:"neighbours,omitempty"`
	// Section returns with each hit its heading section: the consecutive chunks of its
	// document with its heading path, at most this many centred on it (small-to-big;
	// 0..MaxSection; expand.Section), under the same access filter. Not with Neighbours.
	Section int `json:"section,omitempty"`
	// Where are conditions on the chunks' properties, all ANDed, in the syntax of `ragops
	// query --where` (query.ParseWhere: year>=2018, type=motie|amendement, ...): they narrow
	// the access filter, never replace it. The access properties (accessGroups, accessKey)
	// cannot be named; an unknown property or a bad value is a *BadRequestError naming it.
	// Neighbours and sections of a hit (its own document's chunks) are expanded under the
	// access filter only.
	Where []string `json:"where,omitempty"`
}

// MaxK bounds Request.K; MaxNeighbours bounds Request.Neighbours; MaxSection bounds
// Request.Section.
const (
	MaxK          = 100
	MaxNeighbours = expand.MaxNeighbours
	MaxSection    = expand.MaxSection
)

// Hit is one search hit with, when asked, its neighbouring chunks or its section in ordinal
// order.
type Hit struct {
	vectorstore.Hit
	Neighbours, Section []vectorstore.Hit
}

// BadRequestError is a request the endpoint refuses (400).
type BadRequestError struct{ Err error }

func (e *BadRequestError) Error() string { return e.Err.Error() }

// Searcher runs searches with a Grant's access filter.
type Searcher struct{}

// Search runs req through t's alias, returning only chunks one of g's groups may read: the
// filter (vectorstore.AccessFilter on vectorstore.PropAccessGroups) is part of every mode's
// request. Dense and hybrid text is embedded by the model server the revision's collection
// names (Weaviate nearText and hybrid without a vector).
//
// Errors: errNoGrant for a zero Grant; *BadRequestError; a collection without access
// properties or without a model server (dense, hybrid); Weaviate's errors.
func (Searcher) Search(ctx context.Context, g Grant, t Target, req Request) ([]Hit, error) {
	if len(g.groups) == 0 {
		return nil, errNoGrant
	}
	if strings.TrimSpace(req.Query) == "" {
		return nil, &BadRequestError{Err: errors.New("query is empty")}
	}
	if req.K == 0 {
		req.K = 10
	}
	if req.K < 1 || req.K > MaxK {
		return nil, &BadRequestError{Err: fmt.Errorf("k %d: want 1..%d", req.K, MaxK)}
	}
	if req.Neighbours < 0 || req.Neighbours > MaxNeighbours {
		return nil, &BadRequestError{Err: fmt.Errorf("neighbours %d: want 0..%d", req.Neighbours, MaxNeighbours)}
	}
	if req.Section < 0 || req.Section > MaxSection {
		return nil, &BadRequestError{Err: fmt.Errorf("section %d: want 0..%d", req.Section, MaxSection)}
	}
	var spread expand.Spec
	switch {
	case req.Neighbours > 0 && req.Section > 0:
		return nil, &BadRequestError{Err: errors.New("neighbours and section: ask for one expansion")}
	case req.Neighbours > 0:
		spread = expand.Spec{Mode: expand.Neighbours, Size: req.Neighbours}
	case req.Section > 0:
		spread = expand.Spec{Mode: expand.Section, Size: req.Section}
	}
	if req.Mode == "" {
		req.Mode = string(vectorstore.ModeHybrid)
	}
	mode, err := query.ParseMode(req.Mode)
	if err != nil {
		return nil, &BadRequestError{Err: err}
	}
	alpha := float32(0.5)
	if req.Alpha != nil {
		alpha = *req.Alpha
	}
	if alpha < 0 || alpha > 1 {
		return nil, &BadRequestError{Err: fmt.Errorf("alpha %v: want 0..1", alpha)}
	}
	coll, found, err := t.Store.GetAlias(ctx, t.Alias)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, &NotServedError{Index: t.Alias, Reason: "no active revision yet"}
	}
	info, err := t.Store.Collection(ctx, coll)
	if err != nil {
		return nil, err
	}
	if !info.AccessProperties {
		return nil, &vectorstore.AccessPropertiesError{Collection: coll}
	}
	q := vectorstore.Query{Mode: mode, Text: req.Query, Limit: req.K, WithText: true,
		Access: &vectorstore.AccessFilter{Groups: g.Groups()}}
	if len(req.Where) > 0 {
		if q.Where, err = where(ctx, t.Store, coll, req.Where); err != nil {
			return nil, err
		}
	}
	if mode != vectorstore.ModeBM25 {
		if info.Vectorizer == (vectorstore.Transformers{}) {
			return nil, fmt.Errorf("revision %s (collection %s) has no model server wired: only bm25 can be served", info.Revision, coll)
		}
		q.EmbedText, q.Alpha = true, alpha
	}
	// The collection, not the alias: the one checked above answers, even if the alias moves.
	hits, err := t.Store.Search(ctx, coll, q)
	if err != nil {
		return nil, err
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i].Hit = h
		// Expansion obeys access like the search: the same filter is part of the request.
		around, err := expand.Context(ctx, t.Store, coll, h, spread, q.Access)
		if err != nil {
			return nil, err
		}
		if spread.Mode == expand.Section {
			out[i].Section = around
		} else {
			out[i].Neighbours = around
		}
	}
	return out, nil
}

// propertyRe finds the property a where condition names.
var propertyRe = regexp.MustCompile(`^\s*([_A-Za-z][_0-9A-Za-z]*)`)

// where parses a request's conditions with the property types of collection coll, less the
// access properties: the caller's conditions are ANDed with the access filter
// (vectorstore.Search) and cannot name what it filters on.
func where(ctx context.Context, s *vectorstore.Store, coll string, conds []string) (*filters.WhereBuilder, error) {
	types, err := s.PropertyTypes(ctx, coll)
	if err != nil {
		return nil, err
	}
	delete(types, vectorstore.PropAccessGroups)
	delete(types, vectorstore.PropAccessKey)
	for _, c := range conds {
		if m := propertyRe.FindStringSubmatch(c); m != nil && (m[1] == vectorstore.PropAccessGroups || m[1] == vectorstore.PropAccessKey) {
			return nil, &BadRequestError{Err: fmt.Errorf("where %q: property %s is the access filter's: it cannot be named", c, m[1])}
		}
	}
	w, err := query.ParseWhere(conds, types)
	if err != nil {
		return nil, &BadRequestError{Err: err}
	}
	return w, nil
}
