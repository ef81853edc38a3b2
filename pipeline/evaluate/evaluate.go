// Package evaluate runs an Evaluation plan (the `ragops evaluate` worker): a BEIR data set's
// queries against a revision's collection or alias, with recall@k, nDCG@k, MRR@k, success@k,
// MAP@k and span hit rate@10 in the result.
package evaluate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"k8s.io/utils/ptr"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/query/expand"
	"github.com/ragops/ragops/vectorstore"
)

// Options configure Run.
type Options struct {
	// LibraryPath is the ONNX Runtime shared library (empty: $RAGOPS_ONNXRUNTIME_LIB).
	LibraryPath string
	// OutDir receives the TREC run file, per-query metrics, per-query results and the summary.
	OutDir string
	// Frames, when set, receives the per-query results as a log frame (results.WriteFrame):
	// the worker's stdout, which the controller reads back from the pod's log.
	Frames io.Writer
}

// queryEncoder adapts the embedding model to evaluator.QueryEncoder (with its query prefix).
type queryEncoder struct{ m *embedder.Model }

func (q queryEncoder) EncodeQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := q.m.EmbedQueries(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// Run runs one evaluation plan and returns its result (the pod's termination message).
// Errors: the plan's mode, fusion or dataset is invalid; the model or Weaviate fail; some
// queries failed (evaluator.ErrQueriesFailed, with the metrics of the others in the result).
func Run(ctx context.Context, log *slog.Logger, p plan.Evaluate, o Options) (res plan.EvaluateResult, err error) {
	ctx, span := tracing.Start(ctx, "evaluate", trace.WithAttributes(attribute.String("ragops.namespace", p.Namespace),
		attribute.String("ragops.evaluation", p.Evaluation), attribute.String("ragops.revision", p.Revision),
		attribute.String("ragops.collection", p.Collection), attribute.String("ragops.mode", string(p.Mode))))
	defer func() {
		span.SetAttributes(attribute.Int("ragops.queries", res.Queries))
		tracing.End(span, err)
	}()
	cfg := evaluator.Config{
		Split: p.Split, Cutoffs: p.K, MaxQueries: p.MaxQueries, OutDir: o.OutDir,
		Alpha:  p.Alpha,
		Origin: results.Origin{Namespace: p.Namespace, Evaluation: p.Evaluation, UID: p.UID, Run: p.Run, Revision: p.Revision, Collection: p.Collection},
	}
	// The plan's mode and fusion are the evaluator's (one type); the evaluator validates them.
	cfg.Mode, cfg.Fusion = p.Mode, p.Fusion
	switch {
	case p.Dataset.Dir != "":
		cfg.Dataset = evaluator.DatasetSource{Name: DatasetName(p.Dataset.Dir), Dir: p.Dataset.Dir}
	case p.Dataset.HTTP != nil:
		cfg.Dataset = evaluator.DatasetSource{Name: DatasetName(p.Dataset.HTTP.URL), URL: p.Dataset.HTTP.URL, SHA256: p.Dataset.HTTP.SHA256}
	default:
		return res, errors.New("plan dataset: neither a folder nor an HTTP archive")
	}
	byWeaviate := p.QueryEmbedding == ragopsv1alpha1.QueryEmbeddingWeaviate && cfg.Mode != evaluator.BM25
	if cfg.Mode != evaluator.BM25 && !byWeaviate {
		model, err := loadModel(p.ModelDir, embedder.Options{
			LibraryPath: o.LibraryPath, Device: embedder.Device(p.Embedder.Device), AllowCPUFallback: p.Embedder.AllowCPUFallback,
			IntraOpThreads: int(p.Embedder.Threads), Precision: embedder.Precision(p.Embedder.Precision),
		})
		if err != nil {
			return res, err
		}
		defer model.Close()
		cfg.Encoder = queryEncoder{model}
	}
	if p.Rerank != nil {
		rr, err := embedder.LoadCrossEncoder(p.Rerank.ModelDir, embedder.Options{
			LibraryPath: o.LibraryPath, Device: embedder.Device(p.Embedder.Device), AllowCPUFallback: p.Embedder.AllowCPUFallback,
			IntraOpThreads: int(p.Embedder.Threads),
		})
		if err != nil {
			return res, fmt.Errorf("rerank model: %w", err)
		}
		defer rr.Close()
		cfg.Reranker, cfg.RerankTopN = rr, p.Rerank.TopN
	}
	vcfg, err := vectorstore.EndpointConfig(p.Weaviate.URL, p.Weaviate.GRPCAddress, os.Getenv(plan.EnvWeaviateAPIKey))
	if err != nil {
		return res, err
	}
	if vcfg.CABundle, err = vectorstore.ReadCAFile(os.Getenv(vectorstore.EnvCAFile)); err != nil {
		return res, err
	}
	vcfg.ReadConsistency = string(p.Weaviate.Consistency)
	store, err := vectorstore.New(vcfg)
	if err != nil {
		return res, err
	}
	if byWeaviate {
		if err := checkVectorizer(ctx, store, p.Collection); err != nil {
			return res, err
		}
		cfg.EmbedByRetriever = true
	}
	var unreadable atomic.Int64
	retriever := evaluator.StoreRetriever{Store: store, Target: p.Collection, WithText: p.Rerank != nil,
		AccessGroups: p.As, Unreadable: &unreadable}
	if p.Expand != nil {
		// Small-to-big, measured as the endpoint expands: the same filter, counted for leaks.
		if retriever.Expansion, err = expansionSpec(*p.Expand); err != nil {
			return res, err
		}
		retriever.WithText = true // the words returned are counted
		cfg.Expander, cfg.ExpandK = retriever, p.Expand.K
	}
	cfg.Retriever = retriever
	log.Info("evaluating", "collection", p.Collection, "revision", p.Revision, "mode", cfg.Mode, "k", p.K, "queryEmbedding", p.QueryEmbedding)
	sum, err := evaluator.Run(ctx, cfg)
	if err != nil && !errors.Is(err, evaluator.ErrQueriesFailed) {
		return res, err
	}
	res = ResultFromSummary(sum)
	if p.Expand != nil {
		res.Expansion = expansionResult(*p.Expand, sum)
		fitIntervals(&res) // the expansion takes room in the message too
	}
	if p.As != nil {
		// Retrieved as the persona (spec.as): what it may not read, 0 when the filter holds.
		res.UnreadableChunks = ptr.To(unreadable.Load())
	}
	if o.Frames != nil && res.Results != nil && res.Results.Error == "" {
		res.Results = EmitResults(o.Frames, o.OutDir, res.Results)
	}
	log.Info("evaluated", "queries", res.Queries, "metrics", sum.Metrics, "failedQueries", sum.FailedQueries)
	return res, err
}

// EmitResults writes the per-query results file of outDir to w as a log frame and returns
// ref, or a ref with the error when the file is unreadable, is not the one ref describes
// (length and SHA-256) or cannot be written.
func EmitResults(w io.Writer, outDir string, ref *plan.ResultsRef) *plan.ResultsRef {
	fail := func(err error) *plan.ResultsRef {
		return &plan.ResultsRef{Queries: ref.Queries, Error: "per-query results: " + err.Error()}
	}
	blob, err := os.ReadFile(filepath.Join(outDir, evaluator.ResultsFile))
	if err != nil {
		return fail(err)
	}
	sum := sha256.Sum256(blob)
	if len(blob) != ref.Bytes || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return fail(fmt.Errorf("%s is %d bytes with SHA-256 %x, not the %d bytes %s the evaluation wrote", evaluator.ResultsFile, len(blob), sum, ref.Bytes, ref.SHA256))
	}
	if err := results.WriteFrame(w, blob); err != nil {
		return fail(err)
	}
	return ref
}

// DatasetName labels a data set by the last element of its folder or URL path without the
// archive extension ("https://host/beir/scifact.tar.gz" -> "scifact"); the fingerprint of the
// per-query results identifies it exactly.
func DatasetName(location string) string {
	if u, err := url.Parse(location); err == nil && u.Scheme != "" {
		location = u.Path
	}
	name := path.Base(strings.TrimRight(location, "/"))
	for _, ext := range []string{".tar.gz", ".tgz", ".zip"} {
		name = strings.TrimSuffix(name, ext)
	}
	if name == "." || name == "/" {
		return ""
	}
	return name
}

// ResultFromSummary converts the evaluator's Summary to the termination-message result.
func ResultFromSummary(sum evaluator.Summary) plan.EvaluateResult {
	res := plan.EvaluateResult{Queries: sum.Queries, UnknownQrels: sum.Dropped.UnknownQueries + sum.Dropped.UnknownDocuments}
	for _, k := range sum.Cutoffs {
		name := func(m metrics.Measure) string { return fmt.Sprintf("%s@%d", m, k) }
		if _, ok := sum.Metrics[name(metrics.Recall)]; !ok {
			continue
		}
		m := plan.MetricsAtK{
			K: k, Recall: sum.Metrics[name(metrics.Recall)], NDCG: sum.Metrics[name(metrics.NDCG)],
			MRR: sum.Metrics[name(metrics.MRR)], Success: sum.Metrics[name(metrics.Success)], MAP: sum.Metrics[name(metrics.MAP)],
		}
		if v, ok := sum.Metrics[fmt.Sprintf("spanHit@%d", k)]; ok {
			m.SpanHit = &v
		}
		res.Metrics = append(res.Metrics, m)
	}
	for name, v := range sum.Metrics {
		if name == "spanHit@10" {
			v := v
			res.SpanHitRate = &v
		}
	}
	if len(sum.Errors) > 0 {
		res.Error = fmt.Sprintf("%d queries failed, e.g. %s", sum.FailedQueries, sum.Errors[0])
	}
	switch {
	case sum.ResultsError != "":
		res.Results = &plan.ResultsRef{Queries: sum.Queries, Error: sum.ResultsError}
	case sum.ResultsSHA256 != "":
		res.Results = &plan.ResultsRef{Queries: sum.Queries, Bytes: sum.ResultsBytes, SHA256: sum.ResultsSHA256}
	}
	// Intervals at every k while the message fits, else at k=10 only, else none.
	for i := range res.Metrics {
		res.Metrics[i].Intervals = intervalsAt(sum, res.Metrics[i].K)
	}
	fitIntervals(&res)
	return res
}

// fitIntervals drops res's intervals at cut-offs other than 10, then at 10, while res is
// larger than a termination message.
func fitIntervals(res *plan.EvaluateResult) {
	for _, keep := range []func(k int) bool{func(k int) bool { return k == metrics.DefaultK }, func(int) bool { return false }} {
		if raw, err := json.Marshal(res); err == nil && len(raw) <= plan.MaxTerminationMessage {
			return
		}
		for i := range res.Metrics {
			if !keep(res.Metrics[i].K) {
				res.Metrics[i].Intervals = nil
			}
		}
	}
}

// expansionSpec is the query/expand form of a plan's expansion.
//
// Errors: an unknown mode or a size out of its bounds.
func expansionSpec(x plan.Expand) (expand.Spec, error) {
	sp := expand.Spec{Size: x.Size}
	switch x.Mode {
	case ragopsv1alpha1.ExpandNeighbours:
		sp.Mode = expand.Neighbours
	case ragopsv1alpha1.ExpandSection:
		sp.Mode = expand.Section
	default:
		return expand.Spec{}, fmt.Errorf("plan expand: mode %q: want %s or %s", x.Mode, ragopsv1alpha1.ExpandNeighbours, ragopsv1alpha1.ExpandSection)
	}
	if err := sp.Validate(); err != nil {
		return expand.Spec{}, fmt.Errorf("plan %w", err)
	}
	return sp, nil
}

// expansionResult takes the expansion metrics at x.K (evaluator.Config.Expander) from sum.
func expansionResult(x plan.Expand, sum evaluator.Summary) *plan.ExpansionResult {
	at := fmt.Sprintf("@%d", sum.ExpandK)
	out := &plan.ExpansionResult{Expand: x, TokensReturned: sum.Metrics["tokensReturned"+at],
		ExpandedTokensReturned: sum.Metrics["expandedTokensReturned"+at]}
	if v, ok := sum.Metrics["spanRecall"+at]; ok {
		out.SpanRecall = &v
	}
	if v, ok := sum.Metrics["expandedSpanRecall"+at]; ok {
		out.ExpandedSpanRecall = &v
	}
	return out
}

// intervalsAt collects the summary's intervals at cut-off k, keyed by measure.
func intervalsAt(sum evaluator.Summary, k int) map[string]plan.MetricInterval {
	out := map[string]plan.MetricInterval{}
	suffix := fmt.Sprintf("@%d", k)
	for name, iv := range sum.Intervals {
		if m, ok := strings.CutSuffix(name, suffix); ok && (slices.Contains(metrics.Measures, metrics.Measure(m)) || m == "spanHit") {
			out[m] = plan.MetricInterval{StdErr: iv.StdErr, Lo: iv.Lo, Hi: iv.Hi}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkVectorizer refuses QueryEmbedding Weaviate on a collection without a
// text2vec-transformers query URL (built while Weaviate lacked the module, or with serving
// disabled), where every nearText would fail the same way.
func checkVectorizer(ctx context.Context, store *vectorstore.Store, collection string) error {
	info, err := store.Collection(ctx, collection)
	if err != nil {
		return fmt.Errorf("queryEmbedding Weaviate: %w", err)
	}
	if info.Vectorizer.QueryURL == "" {
		return fmt.Errorf("queryEmbedding Weaviate: collection %s has no %s vectorizer, so Weaviate cannot embed query text: "+
			"rebuild the revision with the Index's spec.serving enabled on a Weaviate with ENABLE_MODULES=%s, or set spec.queryEmbedding: Job",
			collection, vectorstore.ModuleTransformers, vectorstore.ModuleTransformers)
	}
	return nil
}

// loadModel loads the query embedding model.
func loadModel(dir string, o embedder.Options) (*embedder.Model, error) {
	if dir == "" {
		return nil, fmt.Errorf("plan has no model folder")
	}
	return embedder.Load(dir, o)
}
