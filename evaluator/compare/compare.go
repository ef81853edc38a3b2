// Package compare compares two Evaluations query by query (`ragops compare`): for each
// metric the mean difference B − A with its 95% paired bootstrap interval, the two-sided
// paired randomization test's p-value and the counts of queries better, worse and tied,
// then the queries that changed most with the gold document's rank in both runs.
//
// Both runs must have scored the same queries against the same judgements (equal
// fingerprints, package results); anything else is refused, since a paired test over
// different queries means nothing. The statistics are those of package stats (Efron and
// Tibshirani's percentile bootstrap; Smucker, Allan and Carterette's randomization test),
// seeded from both Evaluations' UIDs and the metric, so a comparison prints the same figures
// every time.
//
// The per-query results come from the Evaluations' results ConfigMaps
// (results.ConfigMapName, key results.ConfigMapKey) or from files.
package compare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
)

// Options configure Compare; zero values take the defaults.
type Options struct {
	// Metrics to compare (default: every metric both runs hold, spanHit@k included).
	Metrics []string
	// Primary orders the changed queries (default "ndcg@10", else the first metric).
	Primary string
	// Top is the number of changed queries listed (default 10; negative: none).
	Top int
	// Stats sets the resample counts and confidence (Seed is derived from the runs).
	Stats stats.Options
}

// Side describes one of the two runs.
type Side struct {
	Namespace  string `json:"namespace,omitempty"`
	Evaluation string `json:"evaluation,omitempty"`
	Revision   string `json:"revision,omitempty"`
	Mode       string `json:"mode"`
	// Source is where the results were read (a file or a ConfigMap).
	Source string `json:"source"`
}

// Metric is the comparison of one metric.
type Metric struct {
	Name string `json:"metric"`
	// A and B are the two runs' means over the compared queries.
	A float64 `json:"a"`
	B float64 `json:"b"`
	// Queries is the number of queries compared (those with spans for spanHit@k).
	Queries int `json:"queries"`
	// Paired holds the mean difference B − A with its interval, the p-value and the counts.
	stats.Paired
	// Significant is P < 0.05.
	Significant bool `json:"significant"`
}

// Change is one query whose Primary metric changed.
type Change struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// A and B are the Primary metric's values, Delta = B − A.
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Delta float64 `json:"delta"`
	// RankA and RankB are the first relevant document's rank in each run (0: not retrieved).
	RankA int `json:"goldRankA"`
	RankB int `json:"goldRankB"`
}

// Report is the outcome of Compare.
type Report struct {
	A           Side     `json:"a"`
	B           Side     `json:"b"`
	Dataset     string   `json:"dataset"`
	Split       string   `json:"split"`
	Fingerprint string   `json:"fingerprint"`
	Queries     int      `json:"queries"`
	Metrics     []Metric `json:"metrics"`
	Primary     string   `json:"primary"`
	Changed     []Change `json:"changed"`
	// Resamples, Flips and Confidence are the statistics' settings.
	Resamples  int     `json:"resamples"`
	Flips      int     `json:"flips"`
	Confidence float64 `json:"confidence"`
}

// ErrDifferentQueries is wrapped by Compare's error when the runs scored different data
// sets, splits, queries or judgements.
var ErrDifferentQueries = errors.New("compare: the two Evaluations did not score the same queries")

// Compare compares run b against run a (B − A). Errors: ErrDifferentQueries, naming what
// differs; a requested metric missing from either run; the statistics' errors.
func Compare(a, b *results.Set, srcA, srcB string, o Options) (*Report, error) {
	if err := sameQueries(a, b); err != nil {
		return nil, err
	}
	if o.Top == 0 {
		o.Top = 10
	}
	names := o.Metrics
	if len(names) == 0 {
		for _, m := range a.AllMetrics() {
			if slices.Contains(b.AllMetrics(), m) {
				names = append(names, m)
			}
		}
	}
	if o.Primary == "" {
		o.Primary = "ndcg@10"
		if !slices.Contains(names, o.Primary) && len(names) > 0 {
			o.Primary = names[0]
		}
	}
	side := func(s *results.Set, src string) Side {
		return Side{Namespace: s.Namespace, Evaluation: s.Evaluation, Revision: s.Revision, Mode: s.Mode, Source: src}
	}
	r := &Report{A: side(a, srcA), B: side(b, srcB), Dataset: a.Dataset, Split: a.Split, Fingerprint: a.Fingerprint,
		Queries: len(a.Queries), Primary: o.Primary}
	for _, name := range names {
		_, va, err := a.Column(name)
		if err != nil {
			return nil, fmt.Errorf("compare: run A (%s): %w", srcA, err)
		}
		_, vb, err := b.Column(name)
		if err != nil {
			return nil, fmt.Errorf("compare: run B (%s): %w", srcB, err)
		}
		so := o.Stats
		so.Seed = stats.Seed(a.UID, b.UID, name)
		p, err := stats.Compare(vb, va, so)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", name, err)
		}
		r.Metrics = append(r.Metrics, Metric{Name: name, A: stats.Mean(va), B: stats.Mean(vb), Queries: len(va), Paired: p, Significant: p.P < 0.05})
		r.Resamples, r.Flips, r.Confidence = p.Diff.Resamples, p.Flips, p.Diff.Confidence
	}
	if o.Top > 0 && slices.Contains(names, o.Primary) {
		r.Changed = changed(a, b, o.Primary, o.Top)
	}
	return r, nil
}

// sameQueries checks that both sets hold the same data set, split, queries and judgements.
func sameQueries(a, b *results.Set) error {
	name := func(s *results.Set) string { return cmp.Or(s.Dataset, "(unnamed)") + "/" + s.Split }
	switch {
	case a.Dataset != b.Dataset || a.Split != b.Split:
		return fmt.Errorf("%w: A is data set %s, B is %s; a paired comparison needs the same data set and split", ErrDifferentQueries, name(a), name(b))
	case a.Fingerprint != b.Fingerprint:
		return fmt.Errorf("%w: both are %s, but their queries or judgements differ (fingerprints %.12s and %.12s; %d and %d queries, e.g. another maxQueries or another version of the data set)",
			ErrDifferentQueries, name(a), short(a.Fingerprint), short(b.Fingerprint), len(a.Queries), len(b.Queries))
	case len(a.Queries) != len(b.Queries):
		return fmt.Errorf("%w: %d and %d queries under the same fingerprint", ErrDifferentQueries, len(a.Queries), len(b.Queries))
	}
	for i := range a.Queries {
		if a.Queries[i].ID != b.Queries[i].ID {
			return fmt.Errorf("%w: query %d is %q in A and %q in B", ErrDifferentQueries, i, a.Queries[i].ID, b.Queries[i].ID)
		}
	}
	return nil
}

func short(fp string) string { return cmp.Or(fp, "(none)") }

// changed lists the top queries by |B − A| of metric, largest first (ties by query ID).
func changed(a, b *results.Set, metric string, top int) []Change {
	ja, jb := slices.Index(a.Metrics, metric), slices.Index(b.Metrics, metric)
	var out []Change
	for i, qa := range a.Queries {
		qb := b.Queries[i]
		var va, vb float64
		if ja >= 0 && jb >= 0 {
			va, vb = qa.Values[ja], qb.Values[jb]
		} else { // spanHit@k
			k := strings.TrimPrefix(metric, "spanHit@")
			j := slices.IndexFunc(a.Cutoffs, func(c int) bool { return fmt.Sprint(c) == k })
			if j < 0 || qa.SpanHit == nil || qb.SpanHit == nil {
				continue
			}
			va, vb = float64(qa.SpanHit[j]), float64(qb.SpanHit[j])
		}
		if va == vb {
			continue
		}
		out = append(out, Change{ID: qa.ID, Text: qa.Text, A: va, B: vb, Delta: vb - va, RankA: qa.FirstRelevant, RankB: qb.FirstRelevant})
	}
	slices.SortStableFunc(out, func(x, y Change) int {
		return cmp.Or(cmp.Compare(math.Abs(y.Delta), math.Abs(x.Delta)), cmp.Compare(x.ID, y.ID))
	})
	return out[:min(top, len(out))]
}

// LoadFile reads per-query results from a file (gzip JSON as the ConfigMap holds it, or
// plain JSON).
func LoadFile(path string) (*results.Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	s, err := results.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("compare: %s: %w", path, err)
	}
	return s, nil
}

// LoadConfigMap reads the per-query results of Evaluation namespace/evaluation from its
// results ConfigMap. Errors: the ConfigMap or its key is missing (naming both), or holds
// results of another Evaluation.
func LoadConfigMap(ctx context.Context, c client.Reader, namespace, evaluation string) (*results.Set, string, error) {
	name := results.ConfigMapName(evaluation)
	src := "configmap " + namespace + "/" + name
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, src, fmt.Errorf("compare: Evaluation %s/%s has no per-query results: ConfigMap %s not found (it is written when an Evaluation completes; --from-file reads files)", namespace, evaluation, name)
		}
		return nil, src, fmt.Errorf("compare: %s: %w", src, err)
	}
	blob, ok := cm.BinaryData[results.ConfigMapKey]
	if !ok {
		return nil, src, fmt.Errorf("compare: %s has no binaryData key %s", src, results.ConfigMapKey)
	}
	s, err := results.Decode(blob)
	if err != nil {
		return nil, src, fmt.Errorf("compare: %s: %w", src, err)
	}
	if s.Evaluation != "" && s.Evaluation != evaluation {
		return nil, src, fmt.Errorf("compare: %s holds the results of Evaluation %q, not %q", src, s.Evaluation, evaluation)
	}
	return s, src, nil
}

// WriteText prints the report as aligned tables.
func (r *Report) WriteText(w io.Writer) error {
	label := func(s Side) string {
		if s.Evaluation == "" {
			return s.Source
		}
		l := s.Namespace + "/" + s.Evaluation
		if s.Revision != "" {
			l += " (revision " + s.Revision + ")"
		}
		return l
	}
	fmt.Fprintf(w, "A: %s, %s\nB: %s, %s\n", label(r.A), r.A.Mode, label(r.B), r.B.Mode)
	fmt.Fprintf(w, "data set %s/%s, %d queries (fingerprint %.12s); B − A per query, %d bootstrap resamples (%.0f%% intervals), %d sign flips\n\n",
		cmp.Or(r.Dataset, "(unnamed)"), r.Split, r.Queries, r.Fingerprint, r.Resamples, 100*r.Confidence, r.Flips)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tA\tB\tB−A\tINTERVAL\tP\tBETTER\tWORSE\tTIED\t")
	for _, m := range r.Metrics {
		mark := ""
		if m.Significant {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%s\t[%s, %s]\t%s%s\t%d\t%d\t%d\t\n", m.Name, m.A, m.B, stats.Signed(m.Diff.Mean, 4), stats.Signed(m.Diff.Lo, 4), stats.Signed(m.Diff.Hi, 4),
			pvalue(m.P, m.Exact), mark, m.Better, m.Worse, m.Tied)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "* p < 0.05 (two-sided paired randomization test); an interval that holds 0 is a tie at this number of queries")
	if len(r.Changed) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nqueries that changed most (%s; gold rank = rank of the first relevant document, - = not retrieved):\n", r.Primary)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "QUERY\tΔ\tGOLD RANK A → B\tTEXT\t\n")
	for _, c := range r.Changed {
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t\n", c.ID, stats.Signed(c.Delta, 3), rank(c.RankA), rank(c.RankB), clip(c.Text, 80))
	}
	return tw.Flush()
}

func pvalue(p float64, exact bool) string {
	s := fmt.Sprintf("%.4f", p)
	if exact {
		s += " (exact)"
	}
	return s
}

func rank(r int) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprint(r)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
