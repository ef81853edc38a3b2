// Package results encodes the per-query results of an Evaluation: for every evaluated query
// its metrics at every cut-off, the rank of its first relevant document, its span hits and
// its top document IDs, as one versioned gzip-compressed JSON object small enough for a
// ConfigMap's binaryData.
//
// The encoding (Version "ragops.dev/per-query-results/v1") is a JSON object of type Set,
// gzip-compressed (RFC 1952). Metric values are columns named in Set.Metrics and rounded to
// 6 decimals (a mean over 10,000 queries moves by at most 5e-7, far below any interval
// width). The encoded size is bounded by MaxBytes (1,000,000 bytes): 10,000 queries with real
// SciFact, QMSum and legalqa-nl texts and real SciFact document IDs at k=10 take 760,625
// bytes, 76 a query (TestTenThousandQueriesFit measures it), so about 13,000 such queries
// fit; each extra cut-off adds its 5 values a query. A larger set is refused with ErrTooLarge
// naming the count, never truncated.
//
// Frames (WriteFrame, ReadFrame) carry an encoded set through a worker's log, from which
// the controller can collect it without the worker holding an API token.
package results

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// Version names the encoding; Decode refuses any other.
const Version = "ragops.dev/per-query-results/v1"

// MaxBytes bounds an encoded Set: a ConfigMap's data and binaryData together may hold at
// most 1 MiB (1,048,576 bytes); 48,576 are left for the object's metadata and other keys.
const MaxBytes = 1_000_000

// ConfigMapKey is the binaryData key of the encoded Set in an Evaluation's results
// ConfigMap (see ConfigMapName).
const ConfigMapKey = "results.json.gz"

// DocsKept is the number of top-ranked document IDs kept per query: the @10 ranking the
// status metrics and the gate use. Ranks beyond it are in FirstRelevant only.
const DocsKept = 10

// Set is the per-query results of one evaluation run.
type Set struct {
	// Version is [Version].
	Version string `json:"version"`
	Origin
	// Dataset and Split name the data set ("scifact", "test"); Fingerprint identifies the
	// evaluated queries and judgements exactly (see Fingerprint).
	Dataset     string `json:"dataset,omitempty"`
	Split       string `json:"split"`
	Fingerprint string `json:"fingerprint"`
	// Mode is the retrieval mode (Dense, BM25, Hybrid).
	Mode string `json:"mode"`
	// Cutoffs are the evaluated k, ascending.
	Cutoffs []int `json:"cutoffs"`
	// Metrics name the columns of Query.Values ("ndcg@10", ...), spanHit excluded.
	Metrics []string `json:"metrics"`
	// Queries are sorted by ID.
	Queries []Query `json:"queries"`
}

// Origin names the Evaluation a set belongs to (all empty outside a cluster).
type Origin struct {
	// Namespace, Evaluation and UID name the Evaluation; Revision and Collection the index
	// revision and the collection or alias queried.
	Namespace  string `json:"namespace,omitempty"`
	Evaluation string `json:"evaluation,omitempty"`
	UID        string `json:"uid,omitempty"`
	// Run is a scheduled run's schedule slot (RFC 3339, UTC); empty for an unscheduled run.
	Run        string `json:"run,omitempty"`
	Revision   string `json:"revision,omitempty"`
	Collection string `json:"collection,omitempty"`
}

// SeedKey is the text the bootstrap of a run's metric intervals is seeded from (with the
// metric's name, stats.OfMetric): the UID, and for a scheduled run "<UID>/<Run>", so each
// scheduled run draws its own resamples and a run is reproduced from its UID and slot.
func (o Origin) SeedKey() string {
	if o.Run == "" {
		return o.UID
	}
	return o.UID + "/" + o.Run
}

// Query is one query's results.
type Query struct {
	ID   string `json:"id"`
	Text string `json:"text,omitempty"`
	// Values are the query's metric values, aligned with Set.Metrics.
	Values []float64 `json:"v"`
	// FirstRelevant is the 1-based rank of the first relevant document in the retrieved
	// ranking (up to the largest cut-off), 0 when none was retrieved.
	FirstRelevant int `json:"rank"`
	// SpanHit, aligned with Set.Cutoffs, is 1 where the top k chunks overlap an annotated
	// relevant span and 0 elsewhere; nil for queries without annotated spans.
	SpanHit []int `json:"span,omitempty"`
	// Docs are the top DocsKept document IDs, best first.
	Docs []string `json:"docs"`
	// Error is set for a query whose retrieval failed (it scores 0).
	Error string `json:"error,omitempty"`
}

// ErrTooLarge is wrapped by Encode's error for a set over MaxBytes.
var ErrTooLarge = errors.New("results: per-query results over the size bound")

// Fingerprint identifies a list of queries with their judgements: the hex SHA-256 over the
// queries sorted by ID, each as its ID, text and its judged documents with their grades
// (sorted by document ID), NUL-separated. Two evaluations with equal fingerprints scored
// the same queries against the same judgements.
func Fingerprint(queries []FingerprintQuery) string {
	qs := slices.Clone(queries)
	sort.Slice(qs, func(i, j int) bool { return qs[i].ID < qs[j].ID })
	h := sha256.New()
	for _, q := range qs {
		fmt.Fprintf(h, "%s\x00%s\x00", q.ID, q.Text)
		docs := make([]string, 0, len(q.Judgements))
		for d := range q.Judgements {
			docs = append(docs, d)
		}
		sort.Strings(docs)
		for _, d := range docs {
			fmt.Fprintf(h, "%s\x00%d\x00", d, q.Judgements[d])
		}
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FingerprintQuery is a query as Fingerprint reads it: ID, text and judgements (document ID
// to grade).
type FingerprintQuery struct {
	ID, Text   string
	Judgements map[string]int
}

// Validate checks the set's shape: the version, unique sorted query IDs, value rows as long
// as Metrics, span rows as long as Cutoffs, finite values.
func (s *Set) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("results: version %q, this build reads %q", s.Version, Version)
	}
	if len(s.Metrics) == 0 {
		return errors.New("results: no metric columns")
	}
	for i, q := range s.Queries {
		if i > 0 && s.Queries[i-1].ID >= q.ID {
			return fmt.Errorf("results: query %d (%q) is not after %q; queries are sorted by ID and unique", i, q.ID, s.Queries[i-1].ID)
		}
		if len(q.Values) != len(s.Metrics) {
			return fmt.Errorf("results: query %q has %d values for %d metrics", q.ID, len(q.Values), len(s.Metrics))
		}
		for j, v := range q.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("results: query %q: %s is %v", q.ID, s.Metrics[j], v)
			}
		}
		if q.SpanHit != nil && len(q.SpanHit) != len(s.Cutoffs) {
			return fmt.Errorf("results: query %q has %d span hits for %d cut-offs", q.ID, len(q.SpanHit), len(s.Cutoffs))
		}
	}
	return nil
}

// Encode validates s and returns it as gzip-compressed JSON, with its values rounded to 6
// decimals. Errors: an invalid set; a result over MaxBytes (wrapping ErrTooLarge, naming the
// query count and the size).
func (s *Set) Encode() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := *s
	c.Queries = make([]Query, len(s.Queries))
	for i, q := range s.Queries {
		q.Values = slices.Clone(q.Values)
		for j, v := range q.Values {
			q.Values[j] = Round6(v)
		}
		c.Queries[i] = q
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err := json.NewEncoder(zw).Encode(&c); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if buf.Len() > MaxBytes {
		return nil, fmt.Errorf("%w: %d queries take %d bytes gzip-compressed, over the %d-byte bound (a ConfigMap holds 1 MiB); evaluate fewer queries (spec.maxQueries) or fewer cut-offs",
			ErrTooLarge, len(s.Queries), buf.Len(), MaxBytes)
	}
	return buf.Bytes(), nil
}

// Round6 rounds v to 6 decimals, as Encode stores values.
func Round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// Decode reads an encoded Set (gzip JSON, or plain JSON) and validates it. Errors: not gzip
// or JSON, an unknown field or version, an invalid set; input over 64 MiB decompressed.
func Decode(b []byte) (*Set, error) {
	var r io.Reader = bytes.NewReader(b)
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		r = zr
	}
	raw, err := io.ReadAll(io.LimitReader(r, 64<<20+1))
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if len(raw) > 64<<20 {
		return nil, errors.New("results: over 64 MiB decompressed")
	}
	var head struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if head.Version != Version {
		return nil, fmt.Errorf("results: version %q, this build reads %q", head.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s Set
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &s, s.Validate()
}

// Column returns the values of metric ("ndcg@10", or "spanHit@10" over the queries with
// spans) in query order, with the IDs of the queries they belong to. Errors: an unknown
// metric.
func (s *Set) Column(metric string) (ids []string, values []float64, err error) {
	if k, ok := strings.CutPrefix(metric, "spanHit@"); ok {
		j := slices.IndexFunc(s.Cutoffs, func(c int) bool { return fmt.Sprint(c) == k })
		if j < 0 {
			return nil, nil, fmt.Errorf("results: %s: cut-off %s not evaluated (cut-offs %v)", metric, k, s.Cutoffs)
		}
		for _, q := range s.Queries {
			if q.SpanHit != nil {
				ids = append(ids, q.ID)
				values = append(values, float64(q.SpanHit[j]))
			}
		}
		if ids == nil {
			return nil, nil, fmt.Errorf("results: %s: no query has annotated spans", metric)
		}
		return ids, values, nil
	}
	j := slices.Index(s.Metrics, metric)
	if j < 0 {
		return nil, nil, fmt.Errorf("results: metric %q not in the results (have %s)", metric, strings.Join(s.Metrics, ", "))
	}
	ids = make([]string, len(s.Queries))
	values = make([]float64, len(s.Queries))
	for i, q := range s.Queries {
		ids[i], values[i] = q.ID, q.Values[j]
	}
	return ids, values, nil
}

// AllMetrics lists the metric columns followed by spanHit@k where any query has spans.
func (s *Set) AllMetrics() []string {
	out := slices.Clone(s.Metrics)
	if slices.ContainsFunc(s.Queries, func(q Query) bool { return q.SpanHit != nil }) {
		for _, k := range s.Cutoffs {
			out = append(out, fmt.Sprintf("spanHit@%d", k))
		}
	}
	return out
}

// ConfigMapName is the proposed name of an Evaluation's results ConfigMap:
// "<evaluation>-results", owned by the Evaluation. Names over 253 characters are cut to
// 240 and given the first 12 hex digits of the SHA-256 of the Evaluation's name, so that
// they stay unique and valid.
func ConfigMapName(evaluation string) string {
	name := evaluation + "-results"
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(evaluation))
	return strings.TrimRight(name[:240], "-.") + "-" + hex.EncodeToString(sum[:6])
}
