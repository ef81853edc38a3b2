// Package query is `ragops query`: it finds an Index's Weaviate endpoint and alias through the
// Kubernetes API (Resolve), runs one query through the alias (Run), so that the revision the
// alias points at answers with its own query model, and prints the top chunks (Print).
//
// Dense and hybrid queries send the text to Weaviate (nearText; hybrid without a vector): the
// revision collection's text2vec-transformers vectorizer embeds it with the revision's model
// server (ragops serve). A collection without one is refused with a message saying so; bm25
// needs no model.
package query

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/query/expand"
	"github.com/ragops/ragops/vectorstore"
)

// Target is where an Index is queried.
type Target struct {
	// Alias is the Index's Weaviate alias (vectorstore.AliasName).
	Alias string
	// Store reaches the Index's Weaviate (spec.weaviate: URL, gRPC address, API key, CA bundle).
	Store vectorstore.Config
	// ActiveRevision is status.activeRevision, empty before the first rollout.
	ActiveRevision string
}

// Resolve reads Index ns/name and returns its alias and Weaviate endpoint, with the API key
// and CA bundle read from the Secret or ConfigMap spec.weaviate names (in ns).
//
// Errors: the Index, Secret or ConfigMap cannot be read (NotFound included); a key is missing;
// spec.weaviate.url is invalid.
func Resolve(ctx context.Context, c client.Reader, ns, name string) (Target, error) {
	var idx ragopsv1alpha1.Index
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &idx); err != nil {
		return Target{}, fmt.Errorf("index %s/%s: %w", ns, name, err)
	}
	w := idx.Spec.Weaviate
	var apiKey string
	if ref := w.APIKeySecretRef; ref != nil {
		v, err := secretKey(ctx, c, ns, ref)
		if err != nil {
			return Target{}, fmt.Errorf("index %s/%s spec.weaviate.apiKeySecretRef: %w", ns, name, err)
		}
		apiKey = string(v)
	}
	cfg, err := vectorstore.EndpointConfig(w.URL, w.GRPCAddress, apiKey)
	if err != nil {
		return Target{}, fmt.Errorf("index %s/%s spec.weaviate.url: %w", ns, name, err)
	}
	if ca := w.CABundle; ca != nil {
		var pem []byte
		switch {
		case ca.SecretKeyRef != nil:
			pem, err = secretKey(ctx, c, ns, ca.SecretKeyRef)
		case ca.ConfigMapKeyRef != nil:
			var cm corev1.ConfigMap
			if err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ca.ConfigMapKeyRef.Name}, &cm); err == nil {
				v, ok := cm.Data[ca.ConfigMapKeyRef.Key]
				if !ok {
					err = fmt.Errorf("configmap %s has no key %q", ca.ConfigMapKeyRef.Name, ca.ConfigMapKeyRef.Key)
				}
				pem = []byte(v)
			}
		}
		if err != nil {
			return Target{}, fmt.Errorf("index %s/%s spec.weaviate.caBundle: %w", ns, name, err)
		}
		cfg.CABundle = pem
	}
	alias, err := vectorstore.AliasName(ns, name)
	if err != nil {
		return Target{}, err
	}
	return Target{Alias: alias, Store: cfg, ActiveRevision: idx.Status.ActiveRevision}, nil
}

func secretKey(ctx context.Context, c client.Reader, ns string, ref *ragopsv1alpha1.SecretKeySelector) ([]byte, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &s); err != nil {
		return nil, err
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("secret %s has no key %q", ref.Name, ref.Key)
	}
	return v, nil
}

// ParseMode reads a --mode value: dense, bm25 or hybrid in any case (the API's Dense, BM25,
// Hybrid).
//
// Errors: any other value, naming the three.
func ParseMode(s string) (vectorstore.Mode, error) {
	for _, m := range []vectorstore.Mode{vectorstore.ModeDense, vectorstore.ModeBM25, vectorstore.ModeHybrid} {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("query: mode %q: want dense, bm25 or hybrid", s)
}

// Request is one query.
type Request struct {
	// Text is the query.
	Text string
	// Mode is dense (nearText), bm25 or hybrid (text embedded by Weaviate's vectorizer).
	Mode vectorstore.Mode
	// K is the number of chunks; Alpha weighs hybrid (1 dense, 0 BM25).
	K     int
	Alpha float32
	// Where are filter conditions, ANDed (see ParseWhere): only chunks matching all are ranked.
	Where []string
}

// Expand returns each hit with its context under sp (expand.Context: its neighbours or its
// heading section, in ordinal order), read through alias, ranked from 1. `ragops query` reads
// Weaviate directly, without an access filter (the query endpoint adds one).
//
// Errors: those of expand.Context.
func Expand(ctx context.Context, s *vectorstore.Store, alias string, hits []vectorstore.Hit, sp expand.Spec) ([]Expanded, error) {
	out := make([]Expanded, len(hits))
	for i, r := range Results(hits) {
		out[i].Result = r
		around, err := expand.Context(ctx, s, alias, hits[i], sp, nil)
		if err != nil {
			return nil, err
		}
		if sp.Mode == expand.Section {
			out[i].Section = Results(around)
		} else if around != nil {
			out[i].Neighbours = Results(around)
		}
	}
	return out, nil
}

// Run runs req through alias and returns the hits, best first, with their chunk text.
//
// Errors: an empty text or K < 1; no alias (the Index has no active revision yet); a dense or
// hybrid query on a collection without a model server wired; Weaviate's errors.
func Run(ctx context.Context, s *vectorstore.Store, alias string, req Request) (hits []vectorstore.Hit, err error) {
	ctx, span := tracing.Start(ctx, "query", trace.WithAttributes(attribute.String("ragops.alias", alias),
		attribute.String("ragops.mode", string(req.Mode)), attribute.Int("ragops.k", req.K)))
	defer func() { span.SetAttributes(attribute.Int("ragops.hits", len(hits))); tracing.End(span, err) }()
	if strings.TrimSpace(req.Text) == "" || req.K < 1 {
		return nil, fmt.Errorf("query: want a non-empty text and k >= 1, have %q and %d", req.Text, req.K)
	}
	q := vectorstore.Query{Mode: req.Mode, Text: req.Text, Limit: req.K, WithText: true}
	if len(req.Where) > 0 {
		types, err := s.PropertyTypes(ctx, alias)
		if err != nil {
			return nil, err
		}
		if q.Where, err = ParseWhere(req.Where, types); err != nil {
			return nil, err
		}
		q.Properties = metadataProperties(types)
	}
	switch req.Mode {
	case vectorstore.ModeBM25:
	case vectorstore.ModeDense, vectorstore.ModeHybrid:
		q.EmbedText, q.Alpha = true, req.Alpha
		coll, found, err := s.GetAlias(ctx, alias)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("query: alias %s does not exist: the Index has no active revision yet", alias)
		}
		info, err := s.Collection(ctx, coll)
		if err != nil {
			return nil, err
		}
		if info.Vectorizer == (vectorstore.Transformers{}) {
			return nil, fmt.Errorf("query: revision %s (collection %s) has no model server wired, so Weaviate cannot embed a %s query; use --mode bm25, or rebuild with serving enabled", info.Revision, coll, req.Mode)
		}
	default:
		return nil, fmt.Errorf("query: mode %q: want %s, %s or %s", req.Mode, vectorstore.ModeDense, vectorstore.ModeBM25, vectorstore.ModeHybrid)
	}
	// A dense or hybrid query is embedded by Weaviate, through the revision's model server.
	ctx, search := tracing.Start(ctx, "query.search", trace.WithAttributes(attribute.Bool("ragops.embed_text", q.EmbedText)))
	hits, err = s.Search(ctx, alias, q)
	tracing.End(search, err)
	return hits, err
}

// ownProperties are the chunk properties ragops itself writes; the others are metadata.
var ownProperties = []string{vectorstore.PropText, vectorstore.PropDocID, vectorstore.PropChunkOrdinal, vectorstore.PropStart,
	vectorstore.PropEnd, vectorstore.PropHeadingPath, vectorstore.PropRevision, vectorstore.PropPageStart, vectorstore.PropPageEnd,
	vectorstore.PropDocHash, vectorstore.PropMetaHash, vectorstore.PropAccessGroups, vectorstore.PropAccessKey}

// metadataProperties returns the names of types that are not ragops's own chunk properties
// (the Corpus's declared metadata fields), sorted.
func metadataProperties(types map[string]string) []string {
	var out []string
	for name := range types {
		if !slices.Contains(ownProperties, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Formats of Print.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// FirstWords is how many words of a chunk the table shows.
const FirstWords = 12

// Result is one printed hit (the JSON shape of Print).
type Result struct {
	Rank        int      `json:"rank"`
	Score       float32  `json:"score"`
	DocID       string   `json:"docId"`
	Chunk       int      `json:"chunk"`
	Start       int      `json:"start"`
	End         int      `json:"end"`
	PageStart   int      `json:"pageStart,omitempty"`
	PageEnd     int      `json:"pageEnd,omitempty"`
	HeadingPath []string `json:"headingPath,omitempty"`
	Revision    string   `json:"revision"`
	Text        string   `json:"text"`
	// Properties are the chunk's metadata properties, returned with --where.
	Properties map[string]any `json:"properties,omitempty"`
}

// Expanded is one hit and, when expanded (small-to-big), its neighbouring chunks or its
// heading section in ordinal order, the hit's own chunk among them: the JSON shape of
// PrintExpanded and of the query endpoint's results.
type Expanded struct {
	Result
	Neighbours []Result `json:"neighbours,omitempty"`
	Section    []Result `json:"section,omitempty"`
}

// Results converts hits to ranked Results.
func Results(hits []vectorstore.Hit) []Result {
	out := make([]Result, len(hits))
	for i, h := range hits {
		out[i] = Result{Rank: i + 1, Score: h.Score, DocID: h.DocID, Chunk: h.Ordinal, Start: h.Start, End: h.End,
			PageStart: h.PageStart, PageEnd: h.PageEnd, HeadingPath: h.HeadingPath, Revision: h.Revision, Text: h.Text,
			Properties: h.Properties}
	}
	return out
}

// Print writes hits to w: FormatTable (kubectl-style columns RANK, SCORE, DOC, SPAN as
// [start,end) bytes, PAGES, HEADING joined by " > ", and the first FirstWords words) or
// FormatJSON (a list of Result with the whole chunk text).
//
// Errors: an unknown format; write errors.
func Print(w io.Writer, hits []vectorstore.Hit, format string) error {
	res := make([]Expanded, len(hits))
	for i, r := range Results(hits) {
		res[i].Result = r
	}
	return PrintExpanded(w, res, format)
}

// PrintExpanded is Print for expanded hits: the table shows under each hit the chunks of its
// context (SCORE "+", DOC as document#ordinal); the JSON is a list of Expanded.
//
// Errors: an unknown format; write errors.
func PrintExpanded(w io.Writer, res []Expanded, format string) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case FormatTable, "":
	default:
		return fmt.Errorf("query: output %q: want %s or %s", format, FormatTable, FormatJSON)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tSCORE\tDOC\tSPAN\tPAGES\tHEADING\tTEXT")
	for _, r := range res {
		fmt.Fprintf(tw, "%d\t%.4f\t%s\t[%d,%d)\t%s\t%s\t%s\n", r.Rank, r.Score, r.DocID, r.Start, r.End, pages(r.Result), heading(r.Result), firstWords(r.Text, FirstWords))
		for _, c := range append(r.Neighbours, r.Section...) {
			fmt.Fprintf(tw, "\t+\t%s#%d\t[%d,%d)\t%s\t%s\t%s\n", c.DocID, c.Chunk, c.Start, c.End, pages(c), heading(c), firstWords(c.Text, FirstWords))
		}
	}
	return tw.Flush()
}

// pages is r's PAGES column: first-last, or "-" for a format without pages.
func pages(r Result) string {
	if r.PageStart > 0 {
		return fmt.Sprintf("%d-%d", r.PageStart, r.PageEnd)
	}
	return "-"
}

// heading is r's HEADING column: the path joined by " > ", or "-".
func heading(r Result) string {
	if h := strings.Join(r.HeadingPath, " > "); h != "" {
		return h
	}
	return "-"
}

// firstWords returns the first n words of s, with "..." when there were more.
func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) <= n {
		return strings.Join(f, " ")
	}
	return strings.Join(f[:n], " ") + " ..."
}
