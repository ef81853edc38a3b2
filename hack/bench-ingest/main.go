// Command bench-ingest measures whole ingestion jobs into one Weaviate: ragops's build
// (`ragops embed`, pipeline/build.Run in its own process) against the LlamaIndex and
// LangChain scripts of peers.py, on the same BEIR corpus, model folder and chunk size. Run by
// hack/bench-ingest/run.sh:
//
//	bench-ingest prepare -dataset DIR -out DIR -others N -model DIR   # corpus subset, token count
//	bench-ingest run -impl ragops|llamaindex|langchain ...             # one run: one JSON line
//	bench-ingest table -results FILE -meta FILE [-benchmarks FILE]     # medians, ratios, Markdown
//
// A run starts the implementation as a child process and takes its wall time, CPU time
// (user + system, from wait4) and peak RSS, and Weaviate's CPU time over the run from
// /proc/PID/stat; then it counts the collection's objects and evaluates it on the data set's
// test queries (dense, recall@10 and nDCG@10 through ragops's evaluator, with a nearVector
// retriever that asks only for the implementation's document-id property), and deletes it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/vectorstore"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: bench-ingest prepare|run|table [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "prepare":
		err = prepare(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-ingest:", err)
	os.Exit(1)
}

// meta describes the prepared corpus.
type meta struct {
	Dataset   string `json:"dataset"`
	Documents int    `json:"documents"`
	// CorpusTokens counts the tokens of every document's text (title, blank line, text) with
	// the model's tokenizer, no special tokens: the same numerator for every implementation.
	CorpusTokens int64  `json:"corpusTokens"`
	Model        string `json:"model"`
	Note         string `json:"note"`
}

// prepare writes the corpus subset (every document the split's judgements name and the first
// -others others, in corpus order; -others < 0 keeps the whole corpus) with the queries and
// the split's qrels into -out, and meta.json with its token count.
func prepare(args []string) error {
	fs := flag.NewFlagSet("prepare", flag.ExitOnError)
	dataset := fs.String("dataset", "", "BEIR data set folder")
	out := fs.String("out", "", "output folder")
	others := fs.Int("others", 1000, "unjudged documents kept besides the judged ones (<0: the whole corpus)")
	split := fs.String("split", "test", "qrels split whose judged documents are kept")
	model := fs.String("model", "", "model folder (its tokenizer counts the corpus tokens)")
	lib := fs.String("onnxruntime-lib", "", "ONNX Runtime library")
	_ = fs.Parse(args)
	judged := map[string]bool{}
	qrels := filepath.Join(*dataset, "qrels", *split+".tsv")
	raw, err := os.ReadFile(qrels)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if f := strings.Split(line, "\t"); i > 0 && len(f) >= 2 {
			judged[f[1]] = true
		}
	}
	if err := os.MkdirAll(filepath.Join(*out, "qrels"), 0o755); err != nil {
		return err
	}
	m, err := embedder.Load(*model, embedder.Options{LibraryPath: *lib, IntraOpThreads: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	in, err := os.Open(filepath.Join(*dataset, "corpus.jsonl"))
	if err != nil {
		return err
	}
	defer in.Close()
	dst, err := os.Create(filepath.Join(*out, "corpus.jsonl"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(dst)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	md := meta{Dataset: filepath.Base(*dataset), Model: filepath.Base(*model)}
	kept := 0
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var rec struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if !judged[rec.ID] {
			if *others >= 0 && kept >= *others {
				continue
			}
			kept++
		}
		doc, _ := beir.FromFields(rec.Title, rec.Text)
		md.CorpusTokens += int64(len(m.Tokenizer().Encode(doc.Text, false).IDs))
		md.Documents++
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	for _, f := range []string{"queries.jsonl", filepath.Join("qrels", *split+".tsv")} {
		b, err := os.ReadFile(filepath.Join(*dataset, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, f), b, 0o644); err != nil {
			return err
		}
	}
	md.Note = fmt.Sprintf("%d judged documents and %d others", md.Documents-kept, kept)
	if *others < 0 {
		md.Note = "the whole corpus"
	}
	b, _ := json.Marshal(md)
	fmt.Println(string(b))
	return os.WriteFile(filepath.Join(*out, "meta.json"), b, 0o644)
}

// result is one run's line in results.jsonl.
type result struct {
	Impl       string  `json:"impl"`
	Round      int     `json:"round"`
	Collection string  `json:"collection"`
	WallS      float64 `json:"wallS"`
	// CPUS is the implementation process's user + system time; WeaviateCPUS Weaviate's over
	// the same run.
	CPUS         float64 `json:"cpuS"`
	WeaviateCPUS float64 `json:"weaviateCpuS"`
	PeakRSSMiB   float64 `json:"peakRssMiB"`
	Documents    int64   `json:"documents"`
	Chunks       int64   `json:"chunks"`
	// EncodedTokens are the tokens the implementation ran through the model (special tokens
	// included, padding excluded).
	EncodedTokens int64 `json:"encodedTokens"`
	// Objects is the collection's object count after the run.
	Objects int                `json:"objects"`
	Recall  float64            `json:"recall10"`
	NDCG    float64            `json:"ndcg10"`
	Queries int                `json:"queries"`
	Stages  *plan.StageSeconds `json:"stages,omitempty"`
	Peer    json.RawMessage    `json:"peer,omitempty"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	impl := fs.String("impl", "", "ragops, llamaindex or langchain")
	round := fs.Int("round", 0, "round number (recorded)")
	data := fs.String("data", "", "prepared data set folder (corpus.jsonl, queries, qrels)")
	split := fs.String("split", "test", "qrels split evaluated")
	model := fs.String("model", "", "model folder")
	lib := fs.String("onnxruntime-lib", "", "ONNX Runtime library")
	ragops := fs.String("ragops", "", "ragops binary")
	python := fs.String("python", "", "python of the peers' venv")
	peers := fs.String("peers", "hack/bench-ingest/peers.py", "peers.py")
	httpHost := fs.String("http", "", "Weaviate REST host:port")
	grpcHost := fs.String("grpc", "", "Weaviate gRPC host:port")
	wpid := fs.Int("weaviate-pid", 0, "Weaviate's process id (its CPU time is read from /proc)")
	size := fs.Int("size", 128, "chunk size in tokens")
	overlap := fs.Int("overlap", 16, "chunk overlap in tokens")
	batch := fs.Int("batch", 32, "peers' embedding batch (chunks)")
	work := fs.String("work", os.TempDir(), "folder for plans and results")
	keep := fs.Bool("keep", false, "keep the collection")
	_ = fs.Parse(args)
	ctx := context.Background()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: *httpHost, GRPCHost: *grpcHost})
	if err != nil {
		return err
	}
	res := result{Impl: *impl, Round: *round}
	res.Collection = fmt.Sprintf("Bench_%s_%d_%d", *impl, *round, time.Now().UnixNano()%1e9)
	var cmd *exec.Cmd
	var termination, docProp string
	switch *impl {
	case "ragops":
		docProp = vectorstore.PropDocID
		p := plan.Build{
			Version: plan.Version, Namespace: "bench", Index: "ingest", Revision: res.Collection, Collection: res.Collection, Shards: 1,
			Source: plan.Source{Dir: *data, Format: ragopsv1alpha1.FormatBEIR, Include: []string{"corpus.jsonl"}},
			Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyRecursive, Unit: ragopsv1alpha1.UnitTokens,
				Size: int32(*size), Overlap: int32(*overlap)},
			ModelDir: *model,
			Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1, Precision: ragopsv1alpha1.PrecisionFP32},
			// Weaviate's own defaults, which the peers' collections get.
			VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "hnsw", Distance: "cosine", EfConstruction: 128, MaxConnections: 32},
			Weaviate:    plan.Weaviate{URL: "http://" + *httpHost, GRPCAddress: *grpcHost},
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return err
		}
		planPath := filepath.Join(*work, res.Collection+".plan.json")
		termination = filepath.Join(*work, res.Collection+".result.json")
		if err := os.WriteFile(planPath, raw, 0o644); err != nil {
			return err
		}
		cmd = exec.Command(*ragops, "embed", "--plan", planPath, "--termination-log", termination, "--onnxruntime-lib", *lib)
	case "llamaindex", "langchain":
		docProp = map[string]string{"llamaindex": "ref_doc_id", "langchain": "doc_id"}[*impl]
		cmd = exec.Command(*python, *peers, *impl, "--corpus", filepath.Join(*data, "corpus.jsonl"), "--model", *model,
			"--http", *httpHost, "--grpc", *grpcHost, "--collection", res.Collection,
			"--size", strconv.Itoa(*size), "--overlap", strconv.Itoa(*overlap), "--batch", strconv.Itoa(*batch))
	default:
		return fmt.Errorf("-impl %q: want ragops, llamaindex or langchain", *impl)
	}
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	w0, err := procCPU(*wpid)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", *impl, err)
	}
	res.WallS = time.Since(start).Seconds()
	w1, err := procCPU(*wpid)
	if err != nil {
		return err
	}
	res.WeaviateCPUS = w1 - w0
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	res.CPUS = tv(ru.Utime) + tv(ru.Stime)
	res.PeakRSSMiB = float64(ru.Maxrss) / 1024
	if termination != "" {
		var br plan.BuildResult
		raw, err := os.ReadFile(termination)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &br); err != nil {
			return err
		}
		res.Documents, res.Chunks, res.EncodedTokens, res.Stages = br.Documents, br.Chunks, br.Tokens, br.Stages
	} else {
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		last := lines[len(lines)-1]
		var pr struct {
			Documents     int64 `json:"documents"`
			Chunks        int64 `json:"chunks"`
			EncodedTokens int64 `json:"encodedTokens"`
		}
		if err := json.Unmarshal([]byte(last), &pr); err != nil {
			return fmt.Errorf("%s printed %q: %w", *impl, last, err)
		}
		res.Documents, res.Chunks, res.EncodedTokens, res.Peer = pr.Documents, pr.Chunks, pr.EncodedTokens, json.RawMessage(last)
	}
	if res.Objects, err = store.Count(ctx, res.Collection); err != nil {
		return err
	}
	if int64(res.Objects) != res.Chunks {
		return fmt.Errorf("%s: the collection holds %d objects, the run reported %d chunks", *impl, res.Objects, res.Chunks)
	}
	if err := evaluate(ctx, &res, store, docProp, *data, *split, *model, *lib); err != nil {
		return err
	}
	if !*keep {
		if err := store.DeleteCollection(ctx, res.Collection); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// procCPU returns a process's user + system CPU seconds from /proc/PID/stat (0 for pid 0).
func procCPU(pid int) (float64, error) {
	if pid == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// propRetriever searches a collection by nearVector and reads one property as the document
// id: it works on any implementation's collection (vectorstore.Store.Search asks for
// ragops's properties).
type propRetriever struct {
	store      *vectorstore.Store
	collection string
	prop       string
}

func (r propRetriever) Search(ctx context.Context, q evaluator.Query, limit int) ([]evaluator.ChunkHit, error) {
	res, err := r.store.Client().Experimental().Search().WithCollection(r.collection).WithLimit(limit).
		WithProperties(r.prop).WithMetadata(&graphql.Metadata{ID: true, Distance: true}).
		WithNearVector((&graphql.NearVectorArgumentBuilder{}).WithVector(q.Vector)).Do(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]evaluator.ChunkHit, len(res))
	for i, h := range res {
		id, _ := h.Properties[r.prop].(string)
		out[i] = evaluator.ChunkHit{DocID: id, Ordinal: i, Score: 1 - float64(h.Metadata.Distance)}
	}
	return out, nil
}

// evaluate runs the data set's test queries against the run's collection.
func evaluate(ctx context.Context, res *result, store *vectorstore.Store, prop, data, split, model, lib string) error {
	m, err := embedder.Load(model, embedder.Options{LibraryPath: lib, IntraOpThreads: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	sum, err := evaluator.Run(ctx, evaluator.Config{
		Dataset: evaluator.DatasetSource{Name: "bench", Dir: data}, Split: split, Mode: evaluator.Dense,
		Retriever: propRetriever{store: store, collection: res.Collection, prop: prop}, Encoder: m, Concurrency: 2,
	})
	if err != nil {
		return err
	}
	if sum.FailedQueries > 0 {
		return fmt.Errorf("%d queries failed: %v", sum.FailedQueries, sum.Errors)
	}
	res.Recall, res.NDCG, res.Queries = sum.Metrics["recall@10"], sum.Metrics["ndcg@10"], sum.Queries
	return nil
}

// table prints the medians per implementation and the ratios ragops / peer, and with
// -benchmarks rewrites the part of that file between the bench-ingest markers.
func table(args []string) error {
	fs := flag.NewFlagSet("table", flag.ExitOnError)
	resultsPath := fs.String("results", "", "results.jsonl")
	metaPath := fs.String("meta", "", "meta.json of the prepared corpus")
	benchmarks := fs.String("benchmarks", "", "BENCHMARKS.md to update")
	machine := fs.String("machine", "", "machine description for the section")
	setup := fs.String("setup", "", "setup line for the section")
	_ = fs.Parse(args)
	var md meta
	raw, err := os.ReadFile(*metaPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &md); err != nil {
		return err
	}
	f, err := os.Open(*resultsPath)
	if err != nil {
		return err
	}
	defer f.Close()
	runs := map[string][]result{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		if _, ok := runs[r.Impl]; !ok {
			order = append(order, r.Impl)
		}
		runs[r.Impl] = append(runs[r.Impl], r)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i] == "ragops" && order[j] != "ragops" })
	type row struct {
		name                                                                  string
		n                                                                     int
		wall, cpu, wcpu, rss, perCPU, perCPUEnc, perCPUAll, recall, ndcg, enc float64
		chunks, objects                                                       int64
		stages                                                                *plan.StageSeconds
	}
	rows := map[string]row{}
	for _, k := range order {
		rs := runs[k]
		med := func(f func(r result) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			sort.Float64s(v)
			if len(v)%2 == 1 {
				return v[len(v)/2]
			}
			return (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		tok := float64(md.CorpusTokens)
		r := row{name: k, n: len(rs),
			wall: med(func(r result) float64 { return r.WallS }), cpu: med(func(r result) float64 { return r.CPUS }),
			wcpu: med(func(r result) float64 { return r.WeaviateCPUS }), rss: med(func(r result) float64 { return r.PeakRSSMiB }),
			perCPU:    med(func(r result) float64 { return tok / r.CPUS }),
			perCPUEnc: med(func(r result) float64 { return float64(r.EncodedTokens) / r.CPUS }),
			perCPUAll: med(func(r result) float64 { return tok / (r.CPUS + r.WeaviateCPUS) }),
			recall:    med(func(r result) float64 { return r.Recall }), ndcg: med(func(r result) float64 { return r.NDCG }),
			enc:    med(func(r result) float64 { return float64(r.EncodedTokens) }),
			chunks: rs[0].Chunks, objects: int64(rs[0].Objects)}
		for _, x := range rs {
			if int64(x.Objects) != r.objects {
				r.objects = -1 // objects differ between runs (chunking is deterministic: should not)
			}
		}
		if k == "ragops" {
			st := plan.StageSeconds{Read: med(func(r result) float64 { return r.Stages.Read }), Chunk: med(func(r result) float64 { return r.Stages.Chunk }),
				Tokenize: med(func(r result) float64 { return r.Stages.Tokenize }), Inference: med(func(r result) float64 { return r.Stages.Inference }),
				Write: med(func(r result) float64 { return r.Stages.Write })}
			r.stages = &st
		}
		rows[k] = r
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s: %d documents, %d corpus tokens (model tokenizer, no special tokens), %s. %s\n\n",
		md.Dataset, md.Note, md.Documents, md.CorpusTokens, md.Model, *setup)
	b.WriteString("| implementation | runs | wall s | CPU s | Weaviate CPU s | corpus tokens per CPU-s | encoded tokens per CPU-s | corpus tokens per CPU-s incl. Weaviate | peak RSS MiB | encoded tokens | objects | recall@10 | nDCG@10 |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range order {
		r := rows[k]
		objs := strconv.FormatInt(r.objects, 10)
		if r.objects < 0 {
			objs = "varies"
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.4f | %.4f |\n",
			k, r.n, r.wall, r.cpu, r.wcpu, r.perCPU, r.perCPUEnc, r.perCPUAll, r.rss, r.enc, objs, r.recall, r.ndcg)
	}
	if g, ok := rows["ragops"]; ok {
		b.WriteString("\n| ragops / peer | wall (peer / ragops) | corpus tokens per CPU-s | encoded tokens per CPU-s | incl. Weaviate | peak RSS (peer / ragops) | recall@10 | nDCG@10 |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, k := range order {
			if k == "ragops" {
				continue
			}
			p := rows[k]
			fmt.Fprintf(&b, "| %s | %.2fx | %.2fx | %.2fx | %.2fx | %.2fx | %+.4f | %+.4f |\n", k, p.wall/g.wall, g.perCPU/p.perCPU,
				g.perCPUEnc/p.perCPUEnc, g.perCPUAll/p.perCPUAll, p.rss/g.rss, g.recall-p.recall, g.ndcg-p.ndcg)
		}
		if st := g.stages; st != nil {
			sum := st.Read + st.Chunk + st.Tokenize + st.Inference + st.Write
			pct := func(v float64) float64 { return 100 * v / g.wall }
			fmt.Fprintf(&b, "\nWhere ragops's wall time goes (medians of its BuildResult stages): read %.1f s (%.0f%%), chunk %.1f s (%.0f%%), tokenize %.1f s (%.0f%%), ONNX inference %.1f s (%.0f%%), write %.1f s (%.0f%%), the rest (process start, model load, collection, planning) %.1f s (%.0f%%).\n",
				st.Read, pct(st.Read), st.Chunk, pct(st.Chunk), st.Tokenize, pct(st.Tokenize), st.Inference, pct(st.Inference), st.Write, pct(st.Write), g.wall-sum, pct(g.wall-sum))
		}
	}
	fmt.Print(b.String())
	if *benchmarks == "" {
		return nil
	}
	doc, err := os.ReadFile(*benchmarks)
	if err != nil {
		return err
	}
	const begin, end = "<!-- bench-ingest:begin -->\n", "<!-- bench-ingest:end -->"
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q markers", *benchmarks, strings.TrimSpace(begin), end)
	}
	text = text[:i+len(begin)] + "Machine: " + *machine + ".\n\n" + b.String() + text[j:]
	return os.WriteFile(*benchmarks, []byte(text), 0o644)
}
