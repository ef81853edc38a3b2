// Command bench-million measures a collection of a million chunk objects (issue 56): the
// import rate into an HNSW collection, then dense, BM25 and hybrid evaluations of 2,000
// queries through the evaluator's retrieval loop (evaluator.Run with evaluator.StoreRetriever,
// the code of an Evaluation Job minus the query model): per-query latency p50/p99, searches per
// query, failed queries and the evaluating process's peak RSS.
//
// Objects: the Dutch law texts of legalqa-nl (corpus.jsonl) cut into chunks of whole
// paragraphs (at least 800 bytes, at most about 1,600), repeated as copies "<law>~<copy>" until
// the object count is reached; each object's 384-dimensional unit vector is pseudo-random,
// seeded by its copy and chunk number (no model runs: search cost does not depend on what the
// numbers mean). Queries: object j drawn by a seeded generator, the query text ten words of its
// chunk, the query vector its vector plus Gaussian noise (renormalised); the judged document is
// j's document. Everything is seeded: a rerun builds the same objects and queries.
//
//	bench-million gen    -corpus legalqa-nl/corpus.jsonl -objects N -queries 2000 -out DIR
//	bench-million import -corpus ... -objects N -http H -grpc G      (prints objects/s)
//	bench-million eval   -corpus ... -objects N -out DIR -mode dense|bm25|hybrid -http H -grpc G
//
// Run it through hack/bench-million/run.sh, which starts its own Weaviate.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/vectorstore"
)

const (
	dims     = 384
	seed     = 56
	minChunk = 800
	maxChunk = 1600
)

// chunk is one base chunk of a law: byte range [start, end) of its text.
type chunk struct {
	law        string
	ordinal    int
	start, end int
	text       string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench-million gen|import|eval [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	corpus := fs.String("corpus", "/work/shared/datasets/legalqa-nl/corpus.jsonl", "legalqa-nl corpus.jsonl")
	objects := fs.Int("objects", 1_000_000, "chunk objects in the collection")
	queries := fs.Int("queries", 2000, "queries")
	out := fs.String("out", "", "folder of the BEIR queries and qrels (gen, eval)")
	httpHost := fs.String("http", "", "Weaviate HTTP host:port")
	grpcHost := fs.String("grpc", "", "Weaviate gRPC host:port")
	mode := fs.String("mode", "dense", "dense, bm25 or hybrid (eval)")
	batch := fs.Int("batch", 10000, "objects per Upsert call (import)")
	concurrency := fs.Int("concurrency", 1, "queries in flight (eval)")
	until := fs.String("until", "", "import: stop after the batch that ends past this UTC time (HH:MM), keeping what was imported")
	countFile := fs.String("count-file", "", "import: write the number of objects imported here")
	start := fs.Int("from", 0, "import: first object to write (resume an import into the existing collection)")
	fs.IntVar(&upsertBatch, "upsert-batch", upsertBatch, "objects per gRPC batch request (import)")
	fs.IntVar(&inFlight, "in-flight", inFlight, "batch requests in flight (import)")
	_ = fs.Parse(os.Args[2:])
	chunks, err := loadChunks(*corpus)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-million:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	switch os.Args[1] {
	case "gen":
		err = gen(chunks, *objects, *queries, *out)
	case "import":
		err = importAll(ctx, chunks, *start, *objects, *batch, *until, *countFile, *httpHost, *grpcHost)
	case "eval":
		m, ok := map[string]evaluator.Mode{"dense": evaluator.Dense, "bm25": evaluator.BM25, "hybrid": evaluator.Hybrid}[*mode]
		if !ok {
			err = fmt.Errorf("mode %q, want dense, bm25 or hybrid", *mode)
			break
		}
		err = eval(ctx, chunks, *objects, *queries, *out, m, *concurrency, *httpHost, *grpcHost)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-million:", err)
		os.Exit(1)
	}
}

// loadChunks cuts every law into chunks of whole paragraphs.
func loadChunks(path string) ([]chunk, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []chunk
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, err
		}
		t := rec.Text
		start, ord := 0, 0
		for start < len(t) {
			end := start
			for end < len(t) && end-start < minChunk {
				i := strings.Index(t[end:], "\n\n")
				if i < 0 {
					end = len(t)
					break
				}
				end += i + 2
			}
			if end-start > maxChunk { // one long paragraph: cut at a space
				end = start + maxChunk
				if i := strings.LastIndexByte(t[start:end], ' '); i > minChunk/2 {
					end = start + i + 1
				}
			}
			if s := strings.TrimSpace(t[start:end]); s != "" {
				out = append(out, chunk{law: rec.ID, ordinal: ord, start: start, end: end, text: s})
				ord++
			}
			start = end
		}
	}
	return out, sc.Err()
}

// object returns object i: its chunk, document ID and ordinal-in-document.
func object(chunks []chunk, i int) (c chunk, docID string) {
	c = chunks[i%len(chunks)]
	return c, fmt.Sprintf("%s~%03d", c.law, i/len(chunks))
}

// vector returns object i's unit vector.
func vector(i int) []float32 {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	v := make([]float32, dims)
	var n float64
	for k := range v {
		x := r.NormFloat64()
		v[k] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for k := range v {
		v[k] = float32(float64(v[k]) / n)
	}
	return v
}

// query returns query q: the object it targets, its text and its vector.
func query(chunks []chunk, objects, q int) (target int, text string, vec []float32) {
	r := rand.New(rand.NewPCG(seed+1, uint64(q)))
	target = r.IntN(objects)
	c, _ := object(chunks, target)
	words := strings.Fields(c.text)
	from := 0
	if len(words) > 10 {
		from = r.IntN(len(words) - 10)
	}
	text = strings.Join(words[from:min(len(words), from+10)], " ")
	v := vector(target)
	var n float64
	for k := range v {
		v[k] += float32(r.NormFloat64() * 0.5 / math.Sqrt(dims))
		n += float64(v[k]) * float64(v[k])
	}
	n = math.Sqrt(n)
	for k := range v {
		v[k] = float32(float64(v[k]) / n)
	}
	return target, text, v
}

// gen writes DIR/queries.jsonl and DIR/qrels/test.tsv (no corpus.jsonl: the evaluator needs none).
func gen(chunks []chunk, objects, queries int, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return err
	}
	var qb, rb bytes.Buffer
	rb.WriteString("query-id\tcorpus-id\tscore\n")
	for q := 0; q < queries; q++ {
		target, text, _ := query(chunks, objects, q)
		_, doc := object(chunks, target)
		line, _ := json.Marshal(map[string]string{"_id": fmt.Sprintf("q%d", q), "text": text})
		qb.Write(line)
		qb.WriteByte('\n')
		fmt.Fprintf(&rb, "q%d\t%s\t1\n", q, doc)
	}
	if err := os.WriteFile(filepath.Join(dir, "queries.jsonl"), qb.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d base chunks; %d queries over %d objects -> %s\n", len(chunks), queries, objects, dir)
	return os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), rb.Bytes(), 0o644)
}

func collection() string {
	name, _ := vectorstore.CollectionName("bench", "million", "r1")
	return name
}

// upsertBatch and inFlight are the store's gRPC batch size and batch requests in flight.
var upsertBatch, inFlight = 256, 2

func store(httpHost, grpcHost string) (*vectorstore.Store, error) {
	return vectorstore.New(vectorstore.Config{HTTPHost: httpHost, GRPCHost: grpcHost, BatchSize: upsertBatch, Concurrency: inFlight})
}

// importAll writes objects start..objects-1 into the HNSW collection (created when absent), batch objects per
// Upsert, printing the rate after every batch. With until (HH:MM UTC) set it stops after the
// first batch that ends past that time; countFile then receives the number imported.
func importAll(ctx context.Context, chunks []chunk, start, objects, batch int, until, countFile, httpHost, grpcHost string) error {
	var deadline time.Time
	if until != "" {
		t, err := time.Parse("15:04", until)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		deadline = time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	}
	st, err := store(httpHost, grpcHost)
	if err != nil {
		return err
	}
	name := collection()
	if err := st.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: name, Revision: "r1", Dimensions: dims,
		Index: vectorstore.VectorIndex{Type: vectorstore.IndexHNSW}}); err != nil {
		return err
	}
	t0 := time.Now()
	for from := start; from < objects; from += batch {
		n := min(batch, objects-from)
		cs := make([]vectorstore.Chunk, n)
		for k := range cs {
			c, doc := object(chunks, from+k)
			cs[k] = vectorstore.Chunk{DocID: doc, Ordinal: c.ordinal, Start: c.start, End: c.end, Text: c.text, Vector: vector(from + k)}
		}
		if err := st.Upsert(ctx, name, cs); err != nil {
			return fmt.Errorf("objects %d-%d: %w", from, from+n, err)
		}
		s := time.Since(t0).Seconds()
		fmt.Printf("%s imported %d objects (%d this run) in %.0f s: %.0f objects/s\n", time.Now().UTC().Format("15:04:05"), from+n, from+n-start, s, float64(from+n-start)/s)
		if !deadline.IsZero() && time.Now().After(deadline) && from+n < objects {
			fmt.Printf("stopped at %d of %d objects (deadline %s UTC)\n", from+n, objects, until)
			objects = from + n
		}
	}
	if countFile != "" {
		if err := os.WriteFile(countFile, []byte(fmt.Sprint(objects)), 0o644); err != nil {
			return err
		}
	}
	count, err := st.Count(ctx, name)
	if err != nil {
		return err
	}
	fmt.Printf("collection %s holds %d objects (want %d)\n", name, count, objects)
	if count != objects {
		return fmt.Errorf("collection holds %d objects, want %d", count, objects)
	}
	return nil
}

// encoder gives each query text its generated vector.
type encoder map[string][]float32

func (e encoder) EncodeQuery(_ context.Context, text string) ([]float32, error) {
	v, ok := e[text]
	if !ok {
		return nil, fmt.Errorf("no vector for query %q", text)
	}
	return v, nil
}

// timed wraps a Retriever and sums each query's search time and searches (by query text).
type timed struct {
	evaluator.Retriever
	mu       sync.Mutex
	seconds  map[string]float64
	searches map[string]int
}

func (t *timed) Search(ctx context.Context, q evaluator.Query, limit int) ([]evaluator.ChunkHit, error) {
	t0 := time.Now()
	hits, err := t.Retriever.Search(ctx, q, limit)
	d := time.Since(t0).Seconds()
	t.mu.Lock()
	t.seconds[q.Text] += d
	t.searches[q.Text]++
	t.mu.Unlock()
	return hits, err
}

func eval(ctx context.Context, chunks []chunk, objects, queries int, dir string, mode evaluator.Mode, concurrency int, httpHost, grpcHost string) error {
	st, err := store(httpHost, grpcHost)
	if err != nil {
		return err
	}
	enc := encoder{}
	for q := 0; q < queries; q++ {
		_, text, v := query(chunks, objects, q)
		enc[text] = v
	}
	chunks = nil // only the queries are needed from here on
	tr := &timed{Retriever: evaluator.StoreRetriever{Store: st, Target: collection()}, seconds: map[string]float64{}, searches: map[string]int{}}
	cfg := evaluator.Config{Dataset: evaluator.DatasetSource{Name: "legalqa-nl-million", Dir: dir}, Mode: mode,
		Retriever: tr, Cutoffs: []int{10}, Concurrency: concurrency, OutDir: filepath.Join(dir, "out-"+string(mode))}
	if mode != evaluator.BM25 {
		cfg.Encoder = enc
	}
	if mode == evaluator.Hybrid {
		cfg.Alpha = 0.5
	}
	t0 := time.Now()
	sum, err := evaluator.Run(ctx, cfg)
	wall := time.Since(t0).Seconds()
	if err != nil {
		return err
	}
	var lat []float64
	searches := 0
	for text, s := range tr.seconds {
		lat = append(lat, s*1000)
		searches += tr.searches[text]
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(math.Ceil(p*float64(len(lat))))-1)]
	}
	fmt.Printf("mode %s: %d queries (%d failed, %d short) in %.1f s; per query p50 %.1f ms p99 %.1f ms; %.2f searches a query; ndcg@10 %.4f recall@10 %.4f; peak RSS %s\n",
		mode, sum.Queries, sum.FailedQueries, sum.ShortQueries, wall, pct(0.5), pct(0.99),
		float64(searches)/float64(max(1, len(lat))), sum.Metrics["ndcg@10"], sum.Metrics["recall@10"], vmHWM())
	if sum.FailedQueries > 0 {
		return fmt.Errorf("%d queries failed: %v", sum.FailedQueries, sum.Errors)
	}
	return nil
}

// vmHWM returns the process's peak resident set size (VmHWM of /proc/self/status).
func vmHWM() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}
