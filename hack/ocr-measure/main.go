// Command ocr-measure measures the OCR stage (reader/ocr through reader/formats, the code
// the embedder Jobs run) on a scanned SciFact subset written by hack/scan-fixtures/scan.sh
// scifact DIR: it reads every DIR/pdf/<id>.pdf with OCR (one document at a time, Tesseract
// on one core), and prints the character error rate against the source record (title and
// abstract), pages, pages per CPU-second (the process's and Tesseract's CPU time: pages
// per second per core), wall time and the second-pass counts. It then writes two BEIR
// folders for a recall comparison with the same strategy and model:
//
//	DIR/born/  corpus.jsonl with the born-digital records, queries.jsonl, qrels/test.tsv
//	DIR/ocr/   the same with each record's text replaced by its OCR text (no title field)
//
//	go run ./hack/ocr-measure -dir DIR [-dpi 300] [-min-confidence 70] [-limit N] [-budget 30m]
//
// With -eval (and Weaviate at -weaviate/-grpc, ONNX Runtime in $RAGOPS_ONNXRUNTIME_LIB, the
// model in -model) it builds both folders with -strategy from config/samples/demo and
// evaluates recall@10 and nDCG@10 on the test split, in process (pipeline/build.Run and
// pipeline/evaluate.Run). With -distractors (the default) both corpora also hold, born-digital,
// every record of DIR/corpus.jsonl that was not read by OCR, so the two differ only in the
// scanned documents' text and retrieval runs against a pool of the usual size; the queries are
// those whose judged documents were all read by OCR.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/pipeline/evaluate"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/formats"
	"github.com/ragops/ragops/reader/ocr"
	"github.com/ragops/ragops/reader/pdf"
)

type record struct {
	ID    string `json:"_id"`
	Title string `json:"title,omitempty"`
	Text  string `json:"text"`
}

func main() {
	var (
		dir      = flag.String("dir", "", "folder written by hack/scan-fixtures/scan.sh scifact")
		dpi      = flag.Int("dpi", ocr.DefaultDPI, "render DPI")
		minConf  = flag.Float64("min-confidence", ocr.DefaultMinConfidence, "second-pass threshold")
		limit    = flag.Int("limit", 0, "read only the first N documents (0: all)")
		budget   = flag.Duration("budget", 0, "stop reading new documents after this long (0: none); the figures cover those read")
		eval     = flag.Bool("eval", false, "also build and evaluate born/ and ocr/ (needs Weaviate)")
		skipRead = flag.Bool("skip-read", false, "with -eval: reuse DIR/ocr from an earlier run")
		strat    = flag.String("strategy", "recursive-128", "ChunkingStrategy of config/samples/demo/10-strategies.yaml")
		url      = flag.String("weaviate", "http://127.0.0.1:18080", "Weaviate HTTP URL")
		grpc     = flag.String("grpc", "127.0.0.1:18079", "Weaviate gRPC address")
		model    = flag.String("model", ".cache/models/all-minilm-l6-v2", "embedding model folder")
		pool     = flag.Bool("distractors", true, "with -eval: add the records of DIR/corpus.jsonl that were not read, born-digital, to both corpora")
	)
	flag.Parse()
	if *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if !*skipRead {
		if err := read(*dir, *dpi, *minConf, *limit, *budget); err != nil {
			fmt.Fprintln(os.Stderr, "ocr-measure:", err)
			os.Exit(1)
		}
	}
	if *eval {
		if err := evaluateBoth(*dir, *strat, *url, *grpc, *model, *pool); err != nil {
			fmt.Fprintln(os.Stderr, "ocr-measure:", err)
			os.Exit(1)
		}
	}
}

func cpuSeconds() float64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func read(dir string, dpi int, minConf float64, limit int, budget time.Duration) error {
	ctx := context.Background()
	src, err := readCorpus(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(src))
	for id := range src {
		if _, err := os.Stat(filepath.Join(dir, "pdf", id+".pdf")); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	r, err := formats.New(ctx, formats.Options{PDF: pdf.Options{Workers: 1}, OCR: ocr.Options{Mode: ocr.Auto, DPI: dpi, MinConfidence: minConf}})
	if err != nil {
		return err
	}
	defer r.Close()
	var (
		stats         reader.OCRStats
		edits, chars  float64
		ocrRecs       []record
		skipped       = map[reader.SkipReason]int{}
		wall0, cpu0   = time.Now(), cpuSeconds()
		worst, worstC = "", 0.0
	)
	for i, id := range ids {
		if budget > 0 && time.Since(wall0) > budget {
			fmt.Fprintf(os.Stderr, "budget of %s spent after %d of %d documents\n", budget, i, len(ids))
			break
		}
		data, err := os.ReadFile(filepath.Join(dir, "pdf", id+".pdf"))
		if err != nil {
			return err
		}
		doc, err := r.Read(ctx, data)
		if err != nil {
			reason, ok := reader.ReasonOf(err)
			if !ok {
				return fmt.Errorf("%s: %w", id, err)
			}
			skipped[reason]++
			fmt.Fprintf(os.Stderr, "%s skipped: %v\n", id, err)
			continue
		}
		if doc.OCR != nil {
			stats.Add(*doc.OCR)
		}
		ref := src[id].Title + "\n\n" + src[id].Text
		cer := ocr.CharErrorRate(ref, doc.Text)
		n := float64(len([]rune(strings.Join(strings.Fields(ref), " "))))
		edits += cer * n
		chars += n
		if cer > worstC {
			worst, worstC = id, cer
		}
		ocrRecs = append(ocrRecs, record{ID: id, Text: doc.Text})
		fmt.Fprintf(os.Stderr, "%s: %d pages, CER %.4f, OCR %+v\n", id, len(doc.Pages), cer, doc.OCR)
		if (i+1)%25 == 0 {
			fmt.Fprintf(os.Stderr, "%d/%d documents, %d pages, CER so far %.4f, %.1f s\n", i+1, len(ids), stats.Pages, edits/chars, time.Since(wall0).Seconds())
		}
	}
	wall, cpu := time.Since(wall0).Seconds(), cpuSeconds()-cpu0
	fmt.Printf("| documents | pages | CER | worst document CER | pages per CPU-second | wall s | CPU s | second pass | still under %.0f | skipped |\n", minConf)
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	fmt.Printf("| %d | %d | %.4f | %.4f (%s) | %.3f | %.0f | %.0f | %d | %d | %v |\n",
		len(ocrRecs), stats.Pages, edits/chars, worstC, worst, float64(stats.Pages)/cpu, wall, cpu, stats.SecondPass, stats.LowConfidence, skipped)
	born := make([]record, 0, len(ocrRecs))
	for _, o := range ocrRecs {
		born = append(born, src[o.ID])
	}
	if err := writeBEIR(dir, "born", born); err != nil {
		return err
	}
	return writeBEIR(dir, "ocr", ocrRecs)
}

func readCorpus(path string) (map[string]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, err
		}
		out[r.ID] = r
	}
	return out, sc.Err()
}

// writeBEIR writes DIR/name/corpus.jsonl with recs and the queries of DIR/queries.jsonl
// and DIR/qrels/test.tsv whose judged documents are all in recs (a subset read with -limit
// or an interrupted scan keeps only fully judged queries).
func writeBEIR(dir, name string, recs []record) error {
	out := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(out, "qrels"), 0o755); err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.ID] = true
	}
	qrels, err := os.ReadFile(filepath.Join(dir, "qrels", "test.tsv"))
	if err != nil {
		return err
	}
	complete := map[string]bool{}
	var rows []string
	for i, l := range strings.Split(strings.TrimSpace(string(qrels)), "\n") {
		f := strings.Split(l, "\t")
		if i == 0 || len(f) < 3 {
			continue
		}
		if _, seen := complete[f[0]]; !seen {
			complete[f[0]] = true
		}
		complete[f[0]] = complete[f[0]] && have[f[1]]
		rows = append(rows, l)
	}
	qr := []string{"query-id\tcorpus-id\tscore"}
	for _, l := range rows {
		if complete[strings.SplitN(l, "\t", 2)[0]] {
			qr = append(qr, l)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "qrels", "test.tsv"), []byte(strings.Join(qr, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	queries, err := os.ReadFile(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return err
	}
	var qs strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(queries)), "\n") {
		var q struct {
			ID string `json:"_id"`
		}
		if json.Unmarshal([]byte(l), &q) == nil && complete[q.ID] {
			qs.WriteString(l + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(out, "queries.jsonl"), []byte(qs.String()), 0o644); err != nil {
		return err
	}
	var sb strings.Builder
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(out, "corpus.jsonl"), []byte(sb.String()), 0o644)
}

func evaluateBoth(dir, strat, url, grpc, model string, distractors bool) error {
	ctx := context.Background()
	if distractors {
		if err := addDistractors(dir); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	spec, err := strategy(strat)
	if err != nil {
		return err
	}
	lib := os.Getenv("RAGOPS_ONNXRUNTIME_LIB")
	weaviate := plan.Weaviate{URL: url, GRPCAddress: grpc}
	emb := ragopsv1alpha1.EmbedderSpec{Device: "cpu", Threads: 1, BatchTokens: 8192}
	names := []string{"born", "ocr"}
	if distractors {
		names = []string{"born+pool", "ocr+pool"}
	}
	fmt.Printf("\n| corpus (%s, %s, dense) | documents | chunks | queries | recall@10 | nDCG@10 |\n|---|---:|---:|---:|---:|---:|\n", strat, filepath.Base(model))
	for _, name := range names {
		data := filepath.Join(dir, name)
		collection := "OcrMeasure_" + strings.ReplaceAll(name, "+", "_")
		b, err := build.Run(ctx, log, plan.Build{
			Version: plan.Version, Namespace: "measure", Index: name, Revision: "m1", Collection: collection, Shards: 1,
			Source:   plan.Source{Dir: data, Format: ragopsv1alpha1.FormatBEIR, Include: []string{"corpus.jsonl"}},
			Strategy: spec, ModelDir: model, Embedder: emb,
			VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "flat", Distance: "cosine"}, Weaviate: weaviate,
		}, build.Options{LibraryPath: lib})
		if err != nil {
			return fmt.Errorf("%s: build: %w", name, err)
		}
		out, err := os.MkdirTemp("", "ocr-measure-")
		if err != nil {
			return err
		}
		r, err := evaluate.Run(ctx, log, plan.Evaluate{
			Version: plan.Version, Namespace: "measure", Evaluation: name, Revision: "m1", Collection: collection,
			Dataset: plan.Source{Dir: data}, Split: "test", Mode: ragopsv1alpha1.ModeDense,
			K: []int{10}, ModelDir: model, Embedder: emb, Weaviate: weaviate,
		}, evaluate.Options{LibraryPath: lib, OutDir: out})
		_ = os.RemoveAll(out)
		if err != nil {
			return fmt.Errorf("%s: evaluate: %w", name, err)
		}
		for _, m := range r.Metrics {
			if m.K == 10 {
				fmt.Printf("| %s | %d | %d | %d | %.4f | %.4f |\n", name, b.Documents, b.Chunks, r.Queries, m.Recall, m.NDCG)
			}
		}
	}
	return nil
}

// strategy reads a ChunkingStrategy of config/samples/demo/10-strategies.yaml by name.
func strategy(name string) (ragopsv1alpha1.ChunkingStrategySpec, error) {
	raw, err := os.ReadFile("config/samples/demo/10-strategies.yaml")
	if err != nil {
		return ragopsv1alpha1.ChunkingStrategySpec{}, err
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var cs ragopsv1alpha1.ChunkingStrategy
		if err := yaml.Unmarshal([]byte(doc), &cs); err == nil && cs.Kind == "ChunkingStrategy" && cs.Name == name {
			return cs.Spec, nil
		}
	}
	return ragopsv1alpha1.ChunkingStrategySpec{}, fmt.Errorf("no ChunkingStrategy %q in config/samples/demo/10-strategies.yaml", name)
}

// addDistractors writes DIR/born+pool and DIR/ocr+pool: DIR/born and DIR/ocr plus every
// record of DIR/corpus.jsonl that was not read by OCR, born-digital in both, with the queries
// and qrels of DIR/born (whose judged documents were all read by OCR). The two corpora then
// differ only in the scanned documents' text.
func addDistractors(dir string) error {
	all, err := readCorpus(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return err
	}
	for _, name := range []string{"born", "ocr"} {
		recs, err := readCorpus(filepath.Join(dir, name, "corpus.jsonl"))
		if err != nil {
			return err
		}
		var out []record
		ids := make([]string, 0, len(all))
		for id := range all {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if r, ok := recs[id]; ok {
				out = append(out, r)
			} else {
				out = append(out, all[id])
			}
		}
		dst := filepath.Join(dir, name+"+pool")
		if err := os.MkdirAll(filepath.Join(dst, "qrels"), 0o755); err != nil {
			return err
		}
		var sb strings.Builder
		for _, r := range out {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			sb.Write(b)
			sb.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dst, "corpus.jsonl"), []byte(sb.String()), 0o644); err != nil {
			return err
		}
		for _, f := range []string{"queries.jsonl", filepath.Join("qrels", "test.tsv")} {
			b, err := os.ReadFile(filepath.Join(dir, "born", f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
