// Command measure-legalnl measures the legalqa-nl strategies through the in-process path
// (pipeline/build.Run and pipeline/evaluate.Run, the code the Index and Evaluation Jobs run) against a running
// Weaviate, without a cluster: for each ChunkingStrategy in a samples file it builds one
// collection, then evaluates it in the given retrieval modes and prints a Markdown table of
// chunks, tokens, build seconds, recall@10 and nDCG@10 (law level) and SpanHit@10 (a top-10 chunk
// overlaps the gold article), with each evaluation's seconds.
//
//	go run ./hack/measure-legalnl -data DIR [-samples config/samples/demo-legalnl/10-strategies.yaml]
//	    [-strategies a,b] [-modes dense,bm25,hybrid-rrf,hybrid-rsf] [-weaviate http://127.0.0.1:18080]
//	    [-grpc 127.0.0.1:18079] [-model $RAGOPS_MODEL_DIR] [-threads 1] [-k 10,40] [-eval-only]
//	go run ./hack/measure-legalnl -count -data DIR   # chunks and tokens per strategy only
//	go run ./hack/measure-legalnl -shape -data DIR   # chunk sizes against the gold articles
//
// -eval-only evaluates collections an earlier run built (same -collection-prefix) without
// building them again; the chunks, tokens and build columns are then "-". -k 3,10,40 adds
// SpanHit@3 and SpanHit@40 in a last column: ten Heading chunks hold far less text than ten
// fixed-512 ones, so different k compare strategies at about the same retrieved text.
//
// -shape chunks the corpus like -count and sets the chunks beside the gold articles
// (query_spans.jsonl, in the indexed document's offsets): per strategy the chunk tokens
// (mean, median, share under 32), the mean gold article's tokens, the share of gold
// articles inside one chunk, the gold law's chunks and those overlapping a gold article per
// question, and the size-only SpanHit@10: the chance that 10 chunks drawn at random from the
// gold law overlap a gold article (1 - C(n-g,10)/C(n,10), mean over questions). Law-level
// recall@10 is 1.000 on the subsets, so that is what SpanHit@10 gives a ranker that finds
// the right law and nothing more: it grows with chunk length.
//
// -count chunks the corpus with each strategy (but Semantic, which needs the model) and the
// model's tokenizer, without ONNX Runtime or Weaviate, and prints the chunks and the tokens a
// build would embed (naive: the chunks' tokens, each cut at the model's positions; late: the
// documents' tokens in macro windows are not counted), to size a full run.
//
// DIR is a BEIR folder (corpus.jsonl, queries.jsonl, qrels/dev.tsv, query_spans.jsonl), e.g.
// a subset written by hack/demo.sh's RAGOPS_DEMO_DOCS step. ONNX Runtime comes from
// $RAGOPS_ONNXRUNTIME_LIB (hack/prepare.d/embedder.sh prints it and the model folder).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/embedder/tokenize"
	"github.com/ragops/ragops/evaluator"
	evalbeir "github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/pipeline/evaluate"
	"github.com/ragops/ragops/reader/beir"
)

type mode struct {
	name   string
	mode   ragopsv1alpha1.RetrievalMode
	fusion ragopsv1alpha1.FusionType
}

var modes = map[string]mode{
	"dense":      {"dense", ragopsv1alpha1.ModeDense, ""},
	"bm25":       {"bm25", ragopsv1alpha1.ModeBM25, ""},
	"hybrid-rrf": {"hybrid-rrf", ragopsv1alpha1.ModeHybrid, ragopsv1alpha1.FusionRanked},
	"hybrid-rsf": {"hybrid-rsf", ragopsv1alpha1.ModeHybrid, ragopsv1alpha1.FusionRelativeScore},
}

func main() {
	var (
		data     = flag.String("data", "", "BEIR folder with corpus.jsonl, queries.jsonl, qrels/dev.tsv, query_spans.jsonl")
		samples  = flag.String("samples", "config/samples/demo-legalnl/10-strategies.yaml", "ChunkingStrategy manifests")
		only     = flag.String("strategies", "", "comma-separated strategy names (default all in -samples)")
		modeList = flag.String("modes", "dense,bm25,hybrid-rrf,hybrid-rsf", "retrieval modes")
		url      = flag.String("weaviate", "http://127.0.0.1:18080", "Weaviate HTTP URL")
		grpc     = flag.String("grpc", "127.0.0.1:18079", "Weaviate gRPC address")
		model    = flag.String("model", os.Getenv("RAGOPS_MODEL_DIR"), "embedding model folder")
		threads  = flag.Int("threads", 1, "ONNX Runtime intra-op threads")
		prefix   = flag.String("collection-prefix", "LegalnlMeasure", "collection name prefix")
		count    = flag.Bool("count", false, "only count chunks and tokens per strategy")
		shape    = flag.Bool("shape", false, "only set the chunks beside the gold articles per strategy")
		evalOnly = flag.Bool("eval-only", false, "evaluate the collections of an earlier run without building")
		cutoffs  = flag.String("k", "10", "cut-offs, comma-separated; SpanHit@k for k other than 10 is printed in a last column")
	)
	flag.Parse()
	if *data == "" || *model == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *shape {
		if err := shapeOnly(*data, *samples, *only, *model); err != nil {
			fmt.Fprintln(os.Stderr, "measure-legalnl:", err)
			os.Exit(1)
		}
		return
	}
	if *count {
		if err := countOnly(*data, *samples, *only, *model); err != nil {
			fmt.Fprintln(os.Stderr, "measure-legalnl:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*data, *samples, *only, *modeList, *url, *grpc, *model, *threads, *prefix, *evalOnly, *cutoffs); err != nil {
		fmt.Fprintln(os.Stderr, "measure-legalnl:", err)
		os.Exit(1)
	}
}

func run(data, samples, only, modeList, url, grpc, model string, threads int, prefix string, evalOnly bool, cutoffs string) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	strategies, err := readStrategies(samples, only)
	if err != nil {
		return err
	}
	var ks []int
	for _, f := range strings.Split(cutoffs, ",") {
		k, err := strconv.Atoi(f)
		if err != nil || k < 1 {
			return fmt.Errorf("-k %q: want positive integers", cutoffs)
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	if !slices.Contains(ks, 10) {
		return fmt.Errorf("-k %q: 10 is needed for recall@10 and SpanHit@10", cutoffs)
	}
	lib := os.Getenv("RAGOPS_ONNXRUNTIME_LIB")
	weaviate := plan.Weaviate{URL: url, GRPCAddress: grpc}
	embedderSpec := ragopsv1alpha1.EmbedderSpec{Device: "cpu", Threads: int32(threads), BatchTokens: 8192}
	fmt.Println("| strategy | chunks | tokens | build s | mode | recall@10 | nDCG@10 | SpanHit@10 | eval s | SpanHit@k |")
	fmt.Println("|---|---:|---:|---:|---|---:|---:|---:|---:|---|")
	for _, s := range strategies {
		collection := prefix + "_" + strings.ReplaceAll(s.Name, "-", "_")
		chunks, tokens, buildSeconds := "-", "-", "-"
		if !evalOnly {
			start := time.Now()
			b, err := build.Run(ctx, log, plan.Build{
				Version: plan.Version, Namespace: "measure", Index: s.Name, Revision: "m1", Collection: collection, Shards: 1,
				Source:   plan.Source{Dir: data, Format: ragopsv1alpha1.FormatBEIR, Include: []string{"corpus.jsonl"}},
				Strategy: s.Spec, ModelDir: model, Embedder: embedderSpec,
				VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "flat", Distance: "cosine"}, Weaviate: weaviate,
			}, build.Options{LibraryPath: lib})
			if err != nil {
				return fmt.Errorf("%s: build: %w", s.Name, err)
			}
			chunks, tokens, buildSeconds = fmt.Sprint(b.Chunks), fmt.Sprint(b.Tokens), fmt.Sprintf("%.0f", time.Since(start).Seconds())
		}
		for _, m := range strings.Split(modeList, ",") {
			md, ok := modes[m]
			if !ok {
				return fmt.Errorf("mode %q: want dense, bm25, hybrid-rrf or hybrid-rsf", m)
			}
			out, err := os.MkdirTemp("", "measure-legalnl-")
			if err != nil {
				return err
			}
			start := time.Now()
			r, err := evaluate.Run(ctx, log, plan.Evaluate{
				Version: plan.Version, Namespace: "measure", Evaluation: s.Name + "-" + m, Revision: "m1", Collection: collection,
				Dataset: plan.Source{Dir: data}, Split: "dev", Mode: md.mode, Alpha: 0.5, Fusion: md.fusion,
				K: ks, ModelDir: model, Embedder: embedderSpec, Weaviate: weaviate,
			}, evaluate.Options{LibraryPath: lib, OutDir: out})
			more := ""
			if err == nil {
				more, err = otherSpanHits(filepath.Join(out, evaluator.QueriesFile), ks)
			}
			_ = os.RemoveAll(out)
			if err != nil {
				return fmt.Errorf("%s %s: evaluate: %w", s.Name, m, err)
			}
			recall, ndcg, span := "-", "-", "-"
			for _, k := range r.Metrics {
				if k.K == 10 {
					recall, ndcg = fmt.Sprintf("%.4f", k.Recall), fmt.Sprintf("%.4f", k.NDCG)
				}
			}
			if r.SpanHitRate != nil {
				span = fmt.Sprintf("%.3f", *r.SpanHitRate)
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s |\n", s.Name, chunks, tokens, buildSeconds, m, recall, ndcg, span, time.Since(start).Seconds(), more)
		}
	}
	return nil
}

// readStrategies decodes the ChunkingStrategy documents of a manifest file, keeping the
// named ones (all when only is empty), in file order.
func readStrategies(path, only string) ([]strategy, error) {
	raw, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	var out []strategy
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var cs ragopsv1alpha1.ChunkingStrategy
		if err := yaml.UnmarshalStrict([]byte(doc), &cs); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if cs.Kind != "ChunkingStrategy" || (len(want) > 0 && !want[cs.Name]) {
			continue
		}
		out = append(out, strategy{cs.Name, cs.Spec})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ChunkingStrategy selected", path)
	}
	return out, nil
}

type strategy struct {
	Name string
	Spec ragopsv1alpha1.ChunkingStrategySpec
}

// countOnly prints, per strategy, the documents, chunks, heading-path share and the tokens
// a naive build embeds (each chunk's TokenCount capped at the model's 510 positions).
func countOnly(data, samples, only, model string) error {
	strategies, err := readStrategies(samples, only)
	if err != nil {
		return err
	}
	tok, err := tokenize.Load(filepath.Join(model, "tokenizer.json"))
	if err != nil {
		return err
	}
	fmt.Println("| strategy | documents | chunks | with heading path | tokens embedded | chunk s |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, s := range strategies {
		if s.Spec.Type == ragopsv1alpha1.StrategySemantic {
			continue
		}
		c, err := registry.New(s.Spec, tok, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		f, err := os.Open(filepath.Join(data, "corpus.jsonl"))
		if err != nil {
			return err
		}
		start := time.Now()
		var docs, chunks, withPath, tokens int
		err = beir.Scan(f, func(e beir.Entry) error {
			if e.Err != nil {
				return e.Err
			}
			cs, err := docchunk.Chunk(context.Background(), c, e.Doc)
			if err != nil {
				return err
			}
			docs++
			chunks += len(cs)
			for _, ch := range cs {
				tokens += min(ch.TokenCount, 510)
				if len(ch.HeadingPath) > 1 {
					withPath++
				}
			}
			return nil
		})
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %.1f |\n", s.Name, docs, chunks, withPath, tokens, time.Since(start).Seconds())
	}
	return nil
}

// shapeOnly prints, per strategy (but Semantic), how its chunks sit against the gold
// articles of the questions in data (see the command's doc comment).
func shapeOnly(data, samples, only, model string) error {
	strategies, err := readStrategies(samples, only)
	if err != nil {
		return err
	}
	tok, err := tokenize.Load(filepath.Join(model, "tokenizer.json"))
	if err != nil {
		return err
	}
	ds, err := evalbeir.Load(os.DirFS(data), evalbeir.Options{Split: "dev"})
	if err != nil {
		return err
	}
	var gold []int // gold article tokens
	for _, list := range ds.Spans {
		for _, qs := range list {
			d, _ := ds.Doc(qs.DocID)
			doc, _ := beir.FromFields(d.Title, d.Text)
			for _, sp := range qs.Spans {
				gold = append(gold, tok.Size(doc.Text[sp.Start:sp.End]))
			}
		}
	}
	fmt.Printf("%d questions, %d gold articles of %.0f tokens on average (median %d)\n\n", len(ds.Spans), len(gold), mean(gold), median(gold))
	fmt.Println("| strategy | chunks | tokens mean | median | under 32 | gold article in one chunk | gold law's chunks | overlapping gold | size-only SpanHit@10 |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range strategies {
		if s.Spec.Type == ragopsv1alpha1.StrategySemantic {
			continue
		}
		c, err := registry.New(s.Spec, tok, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		byDoc := map[string][]chunkers.Chunk{}
		var sizes []int
		for _, d := range ds.Corpus {
			doc, _ := beir.FromFields(d.Title, d.Text)
			cs, err := docchunk.Chunk(context.Background(), c, doc)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.Name, d.ID, err)
			}
			byDoc[d.ID] = cs
			for _, ch := range cs {
				sizes = append(sizes, ch.TokenCount)
			}
		}
		small := 0
		for _, n := range sizes {
			if n < 32 {
				small++
			}
		}
		var whole, spans int
		var lawChunks, goldChunks, chance []float64
		for _, list := range ds.Spans {
			for _, qs := range list {
				cs := byDoc[qs.DocID]
				g := 0
				for _, ch := range cs {
					for _, sp := range qs.Spans {
						if ch.Start < sp.End && sp.Start < ch.End {
							g++
							break
						}
					}
				}
				for _, sp := range qs.Spans {
					spans++
					for _, ch := range cs {
						if ch.Start <= sp.Start && sp.End <= ch.End {
							whole++
							break
						}
					}
				}
				lawChunks = append(lawChunks, float64(len(cs)))
				goldChunks = append(goldChunks, float64(g))
				chance = append(chance, 1-missAll(len(cs), g, 10))
			}
		}
		fmt.Printf("| %s | %d | %.0f | %d | %.1f%% | %.2f | %.1f | %.1f | %.3f |\n", s.Name, len(sizes), mean(sizes), median(sizes),
			100*float64(small)/float64(len(sizes)), float64(whole)/float64(spans), meanF(lawChunks), meanF(goldChunks), meanF(chance))
	}
	return nil
}

// missAll is the chance that k chunks drawn without replacement from n miss all g gold
// ones: C(n-g, k) / C(n, k).
func missAll(n, g, k int) float64 {
	if k >= n {
		if g > 0 {
			return 0
		}
		return 1
	}
	p := 1.0
	for i := 0; i < k; i++ {
		p *= float64(n-g-i) / float64(n-i)
		if p <= 0 {
			return 0
		}
	}
	return p
}

func mean(v []int) float64 {
	t := 0
	for _, x := range v {
		t += x
	}
	return float64(t) / float64(max(len(v), 1))
}

func meanF(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(max(len(v), 1))
}

func median(v []int) int {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	return c[len(c)/2]
}

// otherSpanHits reads the evaluator's per-query records and returns "@k x.xxx" for each
// cut-off but 10: the share of span-annotated questions whose top k chunks overlap a gold
// article.
func otherSpanHits(path string, ks []int) (string, error) {
	raw, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return "", err
	}
	var parts []string
	for _, k := range ks {
		if k == 10 {
			continue
		}
		key := "spanHit@" + strconv.Itoa(k)
		hits, n := 0.0, 0
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var rec evaluator.QueryRecord
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				return "", fmt.Errorf("%s: %w", path, err)
			}
			if v, ok := rec.Values[key]; ok {
				hits += v
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("@%d %.3f", k, hits/float64(n)))
		}
	}
	return strings.Join(parts, ", "), nil
}
