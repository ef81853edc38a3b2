// Command bench-ingest measures whole ingestion jobs into one Weaviate: ragops's build
// (`ragops embed`, pipeline/build.Run in its own process) against the LlamaIndex and
// LangChain scripts of peers.py, on the same BEIR corpus, model folder and chunk size. Run by
// hack/bench-ingest/run.sh:
//
//	bench-ingest prepare -dataset DIR -out DIR -others N -model DIR   # corpus subset, token count
//	bench-ingest run -impl ragops|llamaindex|langchain ...             # one run: one JSON line
//	bench-ingest run -impl operator|operator-2 -kubeconfig ... ...     # one Index through the operator
//	bench-ingest table -results FILE -meta FILE [-benchmarks FILE]     # medians, ratios, Markdown
//
// A run starts the implementation as a child process and takes its wall time, CPU time
// (user + system, from wait4) and peak RSS, and Weaviate's CPU time over the run from
// /proc/PID/stat; then it counts the collection's objects and evaluates it on the data set's
// test queries (dense, recall@10 and nDCG@10 through ragops's evaluator, with a nearVector
// retriever that asks only for the implementation's document-id property), and deletes it.
//
// The operator impls (operator.go) apply a Corpus, a ChunkingStrategy and an Index with the
// same plan on a local cluster and wait for Ready: wall time from the apply to Ready, the
// build pods' process CPU and peak RSS from the local node shim's wait4, the operator's and
// the control plane's CPU from /proc, a timeline; `table` adds their overhead against the
// in-process run.
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

	"github.com/prometheus/procfs"
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
	// Operator holds an operator run's pods, timeline and the operator's and cluster's CPU;
	// for those runs CPUS and PeakRSSMiB are the build pods' processes' (summed CPU, largest
	// peak) and Stages the shards' summed stages.
	Operator *operatorResult `json:"operator,omitempty"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	impl := fs.String("impl", "", "ragops, llamaindex, langchain, operator (1 embedder pod) or operator-2 (2 pods)")
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
	var oc operatorConfig
	fs.StringVar(&oc.kubeconfig, "kubeconfig", "", "operator impls: the local cluster's kubeconfig")
	fs.StringVar(&oc.namespace, "namespace", "bench-ingest", "operator impls: namespace of the run's objects")
	fs.StringVar(&oc.claim, "claim", "bench-data", "operator impls: PVC on the prepared data folder")
	fs.StringVar(&oc.nodeState, "node-state", "", "operator impls: the local node's --state-dir (exit files with rusage)")
	fs.StringVar(&oc.image, "image-model", "", "operator impls: the model folder's path in the worker image (default /models/<model folder name>)")
	fs.IntVar(&oc.managerPID, "manager-pid", 0, "operator impls: the ragops manager's process id")
	clusterPIDs := fs.String("cluster-pids", "", "operator impls: comma-separated ids of the control plane and node processes")
	fs.DurationVar(&oc.timeout, "timeout", time.Hour, "operator impls: how long to wait for Ready")
	_ = fs.Parse(args)
	oc.httpHost, oc.grpcHost, oc.size, oc.overlap = *httpHost, *grpcHost, *size, *overlap
	if oc.image == "" {
		oc.image = "/models/" + filepath.Base(*model)
	}
	for _, f := range strings.Split(*clusterPIDs, ",") {
		if pid, err := strconv.Atoi(f); err == nil {
			oc.clusterPIDs = append(oc.clusterPIDs, pid)
		}
	}
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
	case "operator", "operator-2":
		docProp = vectorstore.PropDocID
		oc.shards = map[string]int{"operator": 1, "operator-2": 2}[*impl]
	case "llamaindex", "langchain":
		docProp = map[string]string{"llamaindex": "ref_doc_id", "langchain": "doc_id"}[*impl]
		cmd = exec.Command(*python, *peers, *impl, "--corpus", filepath.Join(*data, "corpus.jsonl"), "--model", *model,
			"--http", *httpHost, "--grpc", *grpcHost, "--collection", res.Collection,
			"--size", strconv.Itoa(*size), "--overlap", strconv.Itoa(*overlap), "--batch", strconv.Itoa(*batch))
	default:
		return fmt.Errorf("-impl %q: want ragops, llamaindex, langchain, operator or operator-2", *impl)
	}
	var stdout strings.Builder
	w0, err := procCPU(*wpid)
	if err != nil {
		return err
	}
	if cmd != nil {
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", *impl, err)
		}
		res.WallS = time.Since(start).Seconds()
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		res.CPUS = tv(ru.Utime) + tv(ru.Stime)
		res.PeakRSSMiB = float64(ru.Maxrss) / 1024
	} else if err := runOperator(ctx, oc, &res); err != nil {
		return fmt.Errorf("%s: %w", *impl, err)
	}
	w1, err := procCPU(*wpid)
	if err != nil {
		return err
	}
	res.WeaviateCPUS = w1 - w0
	if res.Operator != nil {
		if res.Operator.StatusChunks != res.Chunks {
			return fmt.Errorf("%s: the Index status says %d chunks, its revision %d", *impl, res.Operator.StatusChunks, res.Chunks)
		}
	} else if termination != "" {
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
	if !*keep && res.Operator != nil {
		if err := cleanupOperator(ctx, oc, res.Operator.Index); err != nil {
			return err
		}
		if ok, err := store.CollectionExists(ctx, res.Collection); err != nil || ok {
			return fmt.Errorf("%s: collection %s still there after its Index was deleted (%v)", *impl, res.Collection, err)
		}
	} else if !*keep {
		if err := store.DeleteCollection(ctx, res.Collection); err != nil {
			return err
		}
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// procCPU returns a process's user + system CPU seconds (procfs, /proc/PID/stat; 0 for pid 0).
func procCPU(pid int) (float64, error) {
	if pid == 0 {
		return 0, nil
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
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
	section := fs.String("section", "bench-ingest", "with -benchmarks: the markers <!-- SECTION:begin --> ... <!-- SECTION:end --> replaced")
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
		med := func(f func(r result) float64) float64 { return median(rs, f) }
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
	peers := 0
	for _, k := range order {
		if k != "ragops" && !isOperator(k) {
			peers++
		}
	}
	if g, ok := rows["ragops"]; ok {
		if peers > 0 {
			b.WriteString("\n| ragops / peer | wall (peer / ragops) | corpus tokens per CPU-s | encoded tokens per CPU-s | incl. Weaviate | peak RSS (peer / ragops) | recall@10 | nDCG@10 |\n")
			b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		}
		for _, k := range order {
			if k == "ragops" || isOperator(k) {
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
	operatorTables(&b, order, runs)
	fmt.Print(b.String())
	if *benchmarks == "" {
		return nil
	}
	doc, err := os.ReadFile(*benchmarks)
	if err != nil {
		return err
	}
	begin, end := "<!-- "+*section+":begin -->\n", "<!-- "+*section+":end -->"
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q markers", *benchmarks, strings.TrimSpace(begin), end)
	}
	text = text[:i+len(begin)] + "Machine: " + *machine + ".\n\n" + b.String() + text[j:]
	return os.WriteFile(*benchmarks, []byte(text), 0o644)
}

// isOperator reports whether impl is an Index built by the operator.
func isOperator(impl string) bool { return strings.HasPrefix(impl, "operator") }

// median returns the median of f over rs (the mean of the middle two for an even count).
func median(rs []result, f func(r result) float64) float64 {
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

// operatorTables writes the operator runs' tables: what each run cost (build pods, scan pod,
// operator, control plane and node, Weaviate), when it got where (the timeline), where the
// pods' time went, and the overhead against in-process ragops (wall and CPU ratios).
func operatorTables(b *strings.Builder, order []string, runs map[string][]result) {
	var ops []string
	for _, k := range order {
		if isOperator(k) {
			ops = append(ops, k)
		}
	}
	if len(ops) == 0 {
		return
	}
	op := func(f func(o *operatorResult) float64) func(r result) float64 {
		return func(r result) float64 { return f(r.Operator) }
	}
	b.WriteString("\nThrough the operator (medians): build pods CPU s is the embedder pods' processes (user + system from the local node shim's wait4, summed over the shards); scan pod the Corpus scan's process; operator the ragops manager's process; control plane + node etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the local node's own process (not its pods); all over the run, from the apply to Ready. Peak RSS is the largest pod's.\n\n")
	b.WriteString("| implementation | runs | pods | wall s | build pods CPU s | scan pod CPU s | operator CPU s | control plane + node CPU s | Weaviate CPU s | peak RSS MiB | objects (= Index status chunks) | recall@10 | nDCG@10 |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range ops {
		rs := runs[k]
		fmt.Fprintf(b, "| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %d | %.4f | %.4f |\n", k, len(rs), rs[0].Operator.Shards,
			median(rs, func(r result) float64 { return r.WallS }), median(rs, func(r result) float64 { return r.CPUS }),
			median(rs, op(func(o *operatorResult) float64 { return o.ScanCPUS })), median(rs, op(func(o *operatorResult) float64 { return o.OperatorCPUS })),
			median(rs, op(func(o *operatorResult) float64 { return o.ClusterCPUS })), median(rs, func(r result) float64 { return r.WeaviateCPUS }),
			median(rs, func(r result) float64 { return r.PeakRSSMiB }), rs[0].Objects,
			median(rs, func(r result) float64 { return r.Recall }), median(rs, func(r result) float64 { return r.NDCG }))
	}
	b.WriteString("\nTimeline, seconds after the apply (medians; polled every 250 ms, container start and end from the shim's clock):\n\n")
	b.WriteString("| implementation | Corpus Ready | first build pod seen | first container start | last container end | Index Ready | container time (longest shard) |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range ops {
		rs := runs[k]
		tl := func(f func(t timeline) float64) float64 {
			return median(rs, op(func(o *operatorResult) float64 { return f(o.Timeline) }))
		}
		longest := median(rs, op(func(o *operatorResult) float64 {
			var m float64
			for _, p := range o.Pods {
				m = max(m, p.Finished.Sub(p.Started).Seconds())
			}
			return m
		}))
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", k, tl(func(t timeline) float64 { return t.CorpusReadyS }),
			tl(func(t timeline) float64 { return t.FirstBuildPodS }), tl(func(t timeline) float64 { return t.FirstContainerS }),
			tl(func(t timeline) float64 { return t.LastContainerS }), tl(func(t timeline) float64 { return t.ReadyS }), longest)
	}
	b.WriteString("\nStages (BuildResult, medians; summed over the shards, so with 2 pods they add up to more than the wall time):\n\n")
	b.WriteString("| implementation | read s | chunk s | tokenize s | ONNX inference s | write s |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range append([]string{"ragops"}, ops...) {
		rs := runs[k]
		if len(rs) == 0 || rs[0].Stages == nil {
			continue
		}
		st := func(f func(s *plan.StageSeconds) float64) float64 {
			return median(rs, func(r result) float64 { return f(r.Stages) })
		}
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", k, st(func(s *plan.StageSeconds) float64 { return s.Read }),
			st(func(s *plan.StageSeconds) float64 { return s.Chunk }), st(func(s *plan.StageSeconds) float64 { return s.Tokenize }),
			st(func(s *plan.StageSeconds) float64 { return s.Inference }), st(func(s *plan.StageSeconds) float64 { return s.Write }))
	}
	g, ok := runs["ragops"]
	if !ok {
		return
	}
	gw, gc := median(g, func(r result) float64 { return r.WallS }), median(g, func(r result) float64 { return r.CPUS })
	grss := median(g, func(r result) float64 { return r.PeakRSSMiB })
	fmt.Fprintf(b, "\nThe operator's overhead against the same plan in-process (ragops: wall %.1f s, CPU %.1f s, peak RSS %.0f MiB; ratios of medians, operator / in-process):\n\n", gw, gc, grss)
	b.WriteString("| implementation | wall | build pods CPU | all CPU (pods, scan, operator, control plane + node) | peak RSS | wall - in-process wall s |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range ops {
		rs := runs[k]
		all := median(rs, func(r result) float64 {
			return r.CPUS + r.Operator.ScanCPUS + r.Operator.OperatorCPUS + r.Operator.ClusterCPUS
		})
		w := median(rs, func(r result) float64 { return r.WallS })
		fmt.Fprintf(b, "| %s | %.2fx | %.2fx | %.2fx | %.2fx | %+.1f |\n", k, w/gw,
			median(rs, func(r result) float64 { return r.CPUS })/gc, all/gc, median(rs, func(r result) float64 { return r.PeakRSSMiB })/grss, w-gw)
	}
}
