// Package evaluator measures retrieval quality of an index on a BEIR-format data set:
// queries -> (query embedding) -> chunk search (dense, BM25 or hybrid) -> optional
// cross-encoder rerank of the top chunks -> documents by best chunk -> recall@k, nDCG@k,
// MRR@k, success@k, MAP@k (package metrics, checked against pytrec_eval) and, for data sets
// with annotated spans, the share of queries whose top-k chunks overlap a relevant span.
//
// Run is the entry point of the `evaluate` subcommand. It writes a TREC run file, a
// per-query metrics file and a JSON summary small enough for a pod termination message.
//
// Subpackages: beir (data set loading), metrics (the measures).
//
// Tests read the real data sets through RAGOPS_DATASETS (default: shared/datasets beside
// the repository root); with RAGOPS_REQUIRE_ALL=1 a missing data set fails the test instead
// of skipping it.
package evaluator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/tracing"
)

// DatasetSource says where the BEIR data set lives; set exactly one of Dir, FS, ConfigMap
// and URL.
type DatasetSource struct {
	// Name labels the data set in the summary (e.g. "scifact").
	Name string
	// Dir is a folder in the BEIR layout.
	Dir string
	// FS is a BEIR layout in any file system.
	FS fs.FS
	// ConfigMap is a ConfigMap's data (see beir.ConfigMapFS for its keys).
	ConfigMap map[string]string
	// URL is a tar.gz or zip archive, checked against SHA256 (64 hex digits, required)
	// and extracted under CacheDir (a temporary folder, removed afterwards, when empty).
	URL, SHA256, CacheDir string
}

// Config is everything Run needs. Zero values take the defaults given per field.
type Config struct {
	Dataset DatasetSource
	// Split names qrels/<Split>.tsv; default "test".
	Split string

	// Mode is dense, bm25 or hybrid; required.
	Mode Mode
	// Alpha weighs hybrid search, 0 (pure BM25) to 1 (pure dense); ignored otherwise.
	Alpha float64
	// Fusion is the hybrid fusion type; default RelativeScoreFusion.
	Fusion Fusion
	// Retriever searches the index; required. Encoder embeds queries; required for dense
	// and hybrid unless EmbedByRetriever.
	Retriever Retriever
	Encoder   QueryEncoder
	// EmbedByRetriever sends dense and hybrid queries as text (Query.EmbedText) for the
	// retriever to embed with the index's own query model (Weaviate's vectorizer, the
	// revision's model server) instead of embedding them with Encoder, which must be nil.
	EmbedByRetriever bool
	// Growth bounds the chunk limits tried per query (see RetrieveDocuments).
	Growth Growth

	// Reranker, when set, rescores the top RerankTopN chunks (default 50) of each query.
	Reranker   Reranker
	RerankTopN int

	// Expander, when set, widens each query's top ExpandK chunks in final order to their
	// context (small-to-big), and the summary adds, for those chunks and for their expanded
	// context (each chunk counted once): spanRecall@K and expandedSpanRecall@K (SpanRecall,
	// over the queries with spans) and tokensReturned@K and expandedTokensReturned@K (the
	// chunks' words, over all queries). Tokens are words (text split at white space): a
	// model-independent count of what a reader of the context gets. Chunk text comes from the
	// retriever, else from the data set's document by the chunk's offsets.
	Expander Expander
	// ExpandK is how many top chunks are expanded and measured; default 10.
	ExpandK int

	// Cutoffs are the k of the metrics; 10 is always added.
	Cutoffs []int
	// MaxQueries evaluates only the first n queries of the split when > 0.
	MaxQueries int
	// Concurrency is the number of queries in flight; default 4.
	Concurrency int

	// OutDir, when set, receives run.trec (TREC run), queries.jsonl (per-query metrics),
	// results.json.gz (the per-query results, package results) and summary.json (the
	// Summary); it is created if missing.
	OutDir string
	// Origin labels the per-query results with the Evaluation they belong to.
	Origin results.Origin
	// RunTag is the TREC run tag; default "ragops-<mode>".
	RunTag string
}

// Output file names under Config.OutDir.
const (
	RunFile     = "run.trec"
	QueriesFile = "queries.jsonl"
	ResultsFile = "results.json.gz"
	SummaryFile = "summary.json"
)

// ErrQueriesFailed is wrapped by Run's error when some queries failed but the rest were
// evaluated; the Summary is then complete and counts them in FailedQueries.
var ErrQueriesFailed = errors.New("evaluator: some queries failed")

func (c *Config) defaults() error {
	if c.Split == "" {
		c.Split = "test"
	}
	switch c.Mode {
	case BM25:
	case Dense, Hybrid:
		switch {
		case c.EmbedByRetriever && c.Encoder != nil:
			return errors.New("evaluator: a query encoder and EmbedByRetriever: the queries are embedded one way, not both")
		case !c.EmbedByRetriever && c.Encoder == nil:
			return fmt.Errorf("evaluator: mode %s needs a query encoder (or EmbedByRetriever)", c.Mode)
		}
	case "":
		return errors.New("evaluator: no retrieval mode (want Dense, BM25 or Hybrid)")
	default:
		return fmt.Errorf("evaluator: retrieval mode %q, want Dense, BM25 or Hybrid", c.Mode)
	}
	if c.Mode == Hybrid {
		if c.Alpha < 0 || c.Alpha > 1 {
			return fmt.Errorf("evaluator: hybrid alpha %v, want 0 to 1", c.Alpha)
		}
		switch c.Fusion {
		case "":
			c.Fusion = RelativeScoreFusion
		case RankedFusion, RelativeScoreFusion:
		default:
			return fmt.Errorf("evaluator: fusion %q, want %s or %s", c.Fusion, RankedFusion, RelativeScoreFusion)
		}
	} else {
		c.Alpha, c.Fusion = 0, ""
	}
	if c.Retriever == nil {
		return errors.New("evaluator: no retriever")
	}
	if c.RerankTopN < 0 {
		return fmt.Errorf("evaluator: rerank top N %d, want >= 0", c.RerankTopN)
	}
	if c.Reranker != nil && c.RerankTopN == 0 {
		c.RerankTopN = 50
	}
	if c.Reranker == nil {
		c.RerankTopN = 0
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	switch {
	case c.ExpandK < 0:
		return fmt.Errorf("evaluator: expand k %d, want >= 1", c.ExpandK)
	case c.Expander == nil:
		c.ExpandK = 0
	case c.ExpandK == 0:
		c.ExpandK = metrics.DefaultK
	}
	if c.RunTag == "" {
		c.RunTag = "ragops-" + strings.ToLower(string(c.Mode))
	}
	return nil
}

// LoadDataset reads the data set of src for split, with every document's text.
func LoadDataset(ctx context.Context, src DatasetSource, split string) (*beir.Dataset, error) {
	return loadDataset(ctx, src, beir.Options{Split: split})
}

func loadDataset(ctx context.Context, src DatasetSource, opts beir.Options) (*beir.Dataset, error) {
	set := 0
	for _, ok := range []bool{src.Dir != "", src.FS != nil, src.ConfigMap != nil, src.URL != ""} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("evaluator: data set source sets %d of dir, fs, configMap, url; want exactly one", set)
	}
	fsys := src.FS
	switch {
	case src.Dir != "":
		fsys = os.DirFS(src.Dir)
	case src.ConfigMap != nil:
		var err error
		if fsys, err = beir.ConfigMapFS(src.ConfigMap); err != nil {
			return nil, err
		}
	case src.URL != "":
		dir := src.CacheDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "ragops-dataset-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		root, err := beir.Fetch(ctx, src.URL, dir, beir.FetchOptions{SHA256: src.SHA256})
		if err != nil {
			return nil, err
		}
		fsys = os.DirFS(root)
	}
	return beir.Load(fsys, opts)
}

// Run evaluates cfg.Retriever on the data set and returns the Summary (and writes the
// output files when cfg.OutDir is set). A query whose retrieval fails scores 0, is counted
// in FailedQueries and makes Run return the Summary with an error wrapping
// ErrQueriesFailed; configuration, data set and output errors return no Summary.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if err := cfg.defaults(); err != nil {
		return Summary{}, err
	}
	cutoffs, err := metrics.Cutoffs(cfg.Cutoffs)
	if err != nil {
		return Summary{}, err
	}
	maxK := cutoffs[len(cutoffs)-1]
	// Queries and judgements are what an evaluation needs; document text only where the
	// spans or a reranker that gets no chunk text from the retriever use it.
	opts := beir.Options{Split: cfg.Split, Texts: beir.TextsSpans}
	if cfg.Reranker != nil && !returnsText(cfg.Retriever) {
		opts.Texts = beir.TextsAll
	}
	lctx, span := tracing.Start(ctx, "evaluator.load", trace.WithAttributes(attribute.String("ragops.dataset", cfg.Dataset.Name)))
	ds, err := loadDataset(lctx, cfg.Dataset, opts)
	tracing.End(span, err)
	if err != nil {
		return Summary{}, err
	}
	queries := ds.Queries
	if cfg.MaxQueries > 0 && cfg.MaxQueries < len(queries) {
		queries = queries[:cfg.MaxQueries]
	}

	qctx, span := tracing.Start(ctx, "evaluator.queries", trace.WithAttributes(attribute.Int("ragops.queries", len(queries)),
		attribute.String("ragops.mode", string(cfg.Mode))))
	runs := make([]QueryRun, len(queries))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				runs[i] = runQuery(qctx, &cfg, ds, queries[i], maxK)
			}
		}()
	}
	for i := range queries {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	tracing.End(span, ctx.Err())
	if err := ctx.Err(); err != nil {
		return Summary{}, fmt.Errorf("evaluator: %w", err)
	}

	run := make(map[string][]string, len(runs))
	qrels := make(map[string]map[string]int, len(queries))
	for i, r := range runs {
		ids := make([]string, len(r.Docs))
		for j, d := range r.Docs {
			ids[j] = d.DocID
		}
		run[r.QueryID] = ids
		qrels[r.QueryID] = ds.Qrels[queries[i].ID]
	}
	res, err := metrics.Evaluate(run, qrels, cutoffs)
	if err != nil {
		return Summary{}, err
	}

	sum := Summary{
		Dataset: cfg.Dataset.Name, Split: cfg.Split, Mode: cfg.Mode, Fusion: cfg.Fusion,
		RerankTopN: cfg.RerankTopN, Cutoffs: cutoffs, Queries: len(res.PerQuery),
		Metrics: map[string]float64{}, NoRelevant: res.NoRelevant,
		Judgements: ds.Judgements, Dropped: ds.Dropped,
	}
	if cfg.Mode == Hybrid {
		alpha := cfg.Alpha
		sum.Alpha = &alpha
	}
	for name, v := range res.Mean {
		sum.Metrics[name] = Round4(v)
	}
	records := make(map[string]*QueryRecord, len(runs))
	for _, qv := range res.PerQuery {
		records[qv.QueryID] = &QueryRecord{QueryID: qv.QueryID, Values: qv.Values}
	}
	spanHits := map[int]int{}
	expanded := map[string][2]float64{} // expansion metric -> sum, count
	for _, r := range runs {
		rec := records[r.QueryID]
		if rec == nil { // a query without a relevant document: not evaluated
			continue
		}
		rec.Docs, rec.Chunks, rec.Searches, rec.Reranked, rec.Short = len(r.Docs), len(r.Chunks), r.Searches, r.Reranked, r.Short
		if r.Err != nil {
			rec.Error = r.Err.Error()
			sum.FailedQueries++
			if len(sum.Errors) < 3 {
				sum.Errors = append(sum.Errors, truncate(rec.Error, 200))
			}
		}
		if r.Short {
			sum.ShortQueries++
		}
		if spans := ds.Spans[r.QueryID]; len(spans) > 0 {
			sum.SpanQueries++
			for _, k := range cutoffs {
				hit := 0.0
				if SpanHitAt(r.Chunks, spans, k) {
					hit = 1
					spanHits[k]++
				}
				rec.Values["spanHit@"+fmt.Sprint(k)] = hit
			}
		}
		if cfg.Expander != nil {
			for name, v := range expansionValues(r, ds.Spans[r.QueryID], cfg.ExpandK) {
				rec.Values[name] = v
				expanded[name] = [2]float64{expanded[name][0] + v, expanded[name][1] + 1}
			}
		}
	}
	for name, sc := range expanded {
		sum.Metrics[name] = Round4(sc[0] / sc[1])
	}
	sum.ExpandK = cfg.ExpandK
	if sum.SpanQueries > 0 {
		for _, k := range cutoffs {
			sum.Metrics["spanHit@"+fmt.Sprint(k)] = Round4(float64(spanHits[k]) / float64(sum.SpanQueries))
		}
	}
	if sum.Intervals, err = metricIntervals(res, records, cfg.Origin.SeedKey()); err != nil {
		return Summary{}, err
	}

	if cfg.OutDir != "" {
		ordered := make([]QueryRecord, 0, len(records))
		for _, rec := range records {
			ordered = append(ordered, *rec)
		}
		sort.Slice(ordered, func(i, j int) bool { return ordered[i].QueryID < ordered[j].QueryID })
		set := perQueryResults(&cfg, ds, queries, runs, ordered, cutoffs)
		blob, err := set.Encode()
		switch {
		case errors.Is(err, results.ErrTooLarge):
			// The metrics stand; the set is refused whole, never cut (the error names the count).
			sum.ResultsError = err.Error()
		case err != nil:
			return Summary{}, err
		default:
			sum.ResultsBytes, sum.ResultsSHA256 = len(blob), sha256Hex(blob)
		}
		if err := writeOutputs(cfg.OutDir, cfg.RunTag, runs, ordered, blob, sum); err != nil {
			return Summary{}, err
		}
	}
	if sum.FailedQueries > 0 {
		return sum, fmt.Errorf("%w: %d of %d (first: %s)", ErrQueriesFailed, sum.FailedQueries, len(queries), sum.Errors[0])
	}
	return sum, nil
}

// metricIntervals bootstraps the mean of every metric over the evaluated queries (spanHit
// over the queries with spans), seeded from uid and the metric's name.
func metricIntervals(res metrics.Result, records map[string]*QueryRecord, seedKey string) (map[string]MetricInterval, error) {
	values := map[string][]float64{}
	for _, qv := range res.PerQuery { // ordered by query ID: the same values give the same draw
		for name, v := range records[qv.QueryID].Values {
			values[name] = append(values[name], v)
		}
	}
	out := make(map[string]MetricInterval, len(values))
	for name, v := range values {
		iv, err := stats.OfMetric(v, seedKey, name)
		if err != nil {
			return nil, fmt.Errorf("evaluator: interval of %s: %w", name, err)
		}
		iv = iv.Rounded()
		out[name] = MetricInterval{StdErr: iv.StdErr, Lo: iv.Lo, Hi: iv.Hi}
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a UTF-8 boundary.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

// runQuery retrieves, optionally reranks and ranks one query; failures land in Err.
func runQuery(ctx context.Context, cfg *Config, ds *beir.Dataset, bq beir.Query, maxK int) QueryRun {
	out := QueryRun{QueryID: bq.ID}
	q := Query{ID: bq.ID, Text: bq.Text, Mode: cfg.Mode, Alpha: cfg.Alpha, Fusion: cfg.Fusion}
	switch {
	case cfg.Mode == BM25:
	case cfg.EmbedByRetriever:
		q.EmbedText = true
	default:
		v, err := cfg.Encoder.EncodeQuery(ctx, bq.Text)
		if err != nil {
			out.Err = fmt.Errorf("evaluator: query %q: encode: %w", bq.ID, err)
			return out
		}
		q.Vector = v
	}
	ret, err := RetrieveDocuments(ctx, cfg.Retriever, q, maxK, cfg.Growth)
	out.Searches, out.Limit = ret.Searches, ret.Limit
	if err != nil {
		out.Err = err
		return out
	}
	// A hit on a document the data set does not list is a retrieved document without a
	// judgement: not relevant (BEIR, trec_eval), not a failure.
	out.Chunks, out.Docs, out.Short = ret.Chunks, ret.Docs, ret.Short
	if cfg.Reranker != nil {
		chunks, n, err := Rerank(ctx, cfg.Reranker, q, ret.Chunks, cfg.RerankTopN, func(h ChunkHit) (string, error) { return chunkText(ds, h) })
		if err != nil {
			out.Chunks, out.Docs, out.Err = nil, nil, err
			return out
		}
		docs := AggregateReranked(chunks, n)
		if len(docs) > maxK {
			docs = docs[:maxK]
		}
		out.Chunks, out.Docs, out.Reranked = chunks, docs, n
	}
	if cfg.Expander != nil {
		if err := expandRun(ctx, cfg, ds, &out); err != nil {
			out.Chunks, out.Docs, out.Err = nil, nil, fmt.Errorf("evaluator: query %q: expand: %w", bq.ID, err)
		}
	}
	return out
}

// chunkText is h's text: as the retriever returned it, else cut from the data set's
// document by h's offsets.
func chunkText(ds *beir.Dataset, h ChunkHit) (string, error) {
	if h.Text != "" {
		return h.Text, nil
	}
	doc, ok := ds.Doc(h.DocID)
	if !ok {
		return "", fmt.Errorf("chunk %d of %q has no text: the retriever returns none and the data set's corpus does not hold the document", h.Ordinal, h.DocID)
	}
	if h.Start < 0 || h.End > len(doc.Text) || h.Start >= h.End {
		return "", fmt.Errorf("chunk %d of %q has offsets [%d, %d) outside the document (%d bytes)", h.Ordinal, h.DocID, h.Start, h.End, len(doc.Text))
	}
	return doc.Text[h.Start:h.End], nil
}

// expandRun widens the top cfg.ExpandK chunks of out to their context (cfg.Expander), each
// chunk kept once in the order first met, and counts the words of both.
func expandRun(ctx context.Context, cfg *Config, ds *beir.Dataset, out *QueryRun) error {
	top := out.Chunks[:min(cfg.ExpandK, len(out.Chunks))]
	type key struct {
		doc string
		ord int
	}
	seen := map[key]bool{}
	var ctxChunks []ChunkHit
	for _, h := range top {
		around, err := cfg.Expander.Expand(ctx, h)
		if err != nil {
			return err
		}
		for _, c := range around {
			if k := (key{c.DocID, c.Ordinal}); !seen[k] {
				seen[k] = true
				ctxChunks = append(ctxChunks, c)
			}
		}
	}
	words := func(chunks []ChunkHit) (int, error) {
		n := 0
		for _, c := range chunks {
			text, err := chunkText(ds, c)
			if err != nil {
				return 0, err
			}
			n += len(strings.Fields(text))
		}
		return n, nil
	}
	var err error
	if out.Tokens, err = words(top); err != nil {
		return err
	}
	if out.ContextTokens, err = words(ctxChunks); err != nil {
		return err
	}
	out.Context = ctxChunks
	return nil
}

// expansionValues are the expansion metrics of one query (Config.Expander): span recall of
// its top k chunks and of their context where it has spans, and the words of both.
func expansionValues(r QueryRun, spans []beir.QuerySpans, k int) map[string]float64 {
	at := fmt.Sprintf("@%d", k)
	v := map[string]float64{"tokensReturned" + at: float64(r.Tokens), "expandedTokensReturned" + at: float64(r.ContextTokens)}
	if len(spans) > 0 {
		v["spanRecall"+at] = SpanRecall(r.Chunks[:min(k, len(r.Chunks))], spans)
		v["expandedSpanRecall"+at] = SpanRecall(r.Context, spans)
	}
	return v
}

// perQueryResults builds the per-query results of the evaluated queries (records, sorted by
// ID): their metric values, first relevant rank, span hits and top DocsKept documents.
func perQueryResults(cfg *Config, ds *beir.Dataset, queries []beir.Query, runs []QueryRun, records []QueryRecord, cutoffs []int) *results.Set {
	set := &results.Set{
		Version: results.Version, Origin: cfg.Origin, Dataset: cfg.Dataset.Name, Split: cfg.Split,
		Mode: string(cfg.Mode), Cutoffs: cutoffs,
	}
	for _, k := range cutoffs {
		for _, m := range metrics.Measures {
			set.Metrics = append(set.Metrics, metrics.Name(m, k))
		}
	}
	text := make(map[string]string, len(queries))
	for _, q := range queries {
		text[q.ID] = q.Text
	}
	byID := make(map[string]*QueryRun, len(runs))
	for i := range runs {
		byID[runs[i].QueryID] = &runs[i]
	}
	fp := make([]results.FingerprintQuery, 0, len(records))
	for _, rec := range records {
		qrels := ds.Qrels[rec.QueryID]
		fp = append(fp, results.FingerprintQuery{ID: rec.QueryID, Text: text[rec.QueryID], Judgements: qrels})
		q := results.Query{ID: rec.QueryID, Text: text[rec.QueryID], Values: make([]float64, len(set.Metrics)), Error: rec.Error}
		for j, name := range set.Metrics {
			q.Values[j] = rec.Values[name]
		}
		if _, ok := rec.Values["spanHit@"+fmt.Sprint(cutoffs[0])]; ok {
			q.SpanHit = make([]int, len(cutoffs))
			for j, k := range cutoffs {
				q.SpanHit[j] = int(rec.Values["spanHit@"+fmt.Sprint(k)])
			}
		}
		if r := byID[rec.QueryID]; r != nil {
			for i, d := range r.Docs {
				if q.FirstRelevant == 0 && qrels[d.DocID] >= 1 {
					q.FirstRelevant = i + 1
				}
				if i < results.DocsKept {
					q.Docs = append(q.Docs, d.DocID)
				}
			}
		}
		set.Queries = append(set.Queries, q)
	}
	set.Fingerprint = results.Fingerprint(fp)
	return set
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func writeOutputs(dir, tag string, runs []QueryRun, records []QueryRecord, resultsBlob []byte, sum Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("evaluator: output folder: %w", err)
	}
	write := func(name string, fn func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("evaluator: %w", err)
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("evaluator: writing %s: %w", f.Name(), err)
		}
		return f.Close()
	}
	if err := write(RunFile, func(f *os.File) error { return WriteTRECRun(f, runs, tag) }); err != nil {
		return err
	}
	if err := write(QueriesFile, func(f *os.File) error { return WriteQueryRecords(f, records) }); err != nil {
		return err
	}
	if resultsBlob != nil {
		if err := write(ResultsFile, func(f *os.File) error { _, err := f.Write(resultsBlob); return err }); err != nil {
			return err
		}
	}
	b, err := sum.Marshal()
	if err != nil {
		return err
	}
	return write(SummaryFile, func(f *os.File) error { _, err := f.Write(append(b, '\n')); return err })
}
