// Command bench-embedder measures the Go embedder (package embedder) on SciFact: tokens per
// second and per CPU-second, naive and late, length-sorted token-budget batches versus
// fixed-order batches of 32; and the peak memory of late-embedding a ~12,000-word QMSum
// meeting. It writes the exact chunk spans it used (-spans) so hack/bench-embedder/peer.py
// runs Python onnxruntime + HF tokenizers on the same input and model; run.sh runs both.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder"
)

type result struct {
	Impl       string  `json:"impl"`
	Phase      string  `json:"phase"`
	Tokens     int64   `json:"tokens"`
	Chunks     int     `json:"chunks"`
	WallS      float64 `json:"wallS"`
	CPUS       float64 `json:"cpuS"`
	TokensPerS float64 `json:"tokensPerS"`
	TokensCPU  float64 `json:"tokensPerCpuS"`
	PeakRSSMiB float64 `json:"peakRssMiB,omitempty"`
	Note       string  `json:"note,omitempty"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// peakRSS reads VmHWM (peak resident set) from /proc/self/status, in MiB.
func peakRSS() float64 {
	raw, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

type doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func readCorpus(path string, n int) ([]doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var out []doc
	for sc.Scan() && (n <= 0 || len(out) < n) {
		var d doc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

func main() {
	modelDir := flag.String("model", os.Getenv("RAGOPS_MODEL_DIR"), "model folder")
	lib := flag.String("onnxruntime-lib", "", "ONNX Runtime library (default $RAGOPS_ONNXRUNTIME_LIB)")
	data := flag.String("datasets", "../shared/datasets", "datasets folder")
	nDocs := flag.Int("docs", 300, "SciFact documents")
	chunkSize := flag.Int("chunk", 128, "chunk size in tokens (Recursive chunker)")
	threads := flag.Int("threads", 1, "intra-op threads")
	spans := flag.String("spans", "", "write documents and chunk spans here (JSONL) for the Python peer")
	memory := flag.Bool("memory", false, "only measure peak memory of late-embedding a ~12,000-word QMSum meeting")
	device := flag.String("device", "cpu", "cpu or cuda")
	batchTokens := flag.Int("batch-tokens", 0, "padded tokens per batch (0: the embedder's default)")
	vectorsOut := flag.String("vectors-out", "", "write the naive vectors here (float32 little-endian, row-major) for a cross-check")
	flag.Parse()
	opts := embedder.Options{LibraryPath: *lib, IntraOpThreads: *threads, Device: embedder.Device(*device), BatchTokens: *batchTokens}
	if err := run(*modelDir, opts, *data, *nDocs, *chunkSize, *spans, *vectorsOut, *memory); err != nil {
		fmt.Fprintln(os.Stderr, "bench-embedder:", err)
		os.Exit(1)
	}
}

func run(modelDir string, opts embedder.Options, data string, nDocs, chunkSize int, spansOut, vectorsOut string, memory bool) error {
	ctx := context.Background()
	enc := json.NewEncoder(os.Stdout)
	if memory {
		return memoryRun(ctx, modelDir, opts, data, enc)
	}
	load := func(fixed int) (*embedder.Model, error) {
		o := opts
		o.FixedBatch = fixed
		return embedder.Load(modelDir, o)
	}
	m, err := load(0)
	if err != nil {
		return err
	}
	defer m.Close()
	corpus, err := readCorpus(filepath.Join(data, "scifact", "corpus.jsonl"), nDocs)
	if err != nil {
		return err
	}
	ch, err := chunkers.NewRecursive(m.Tokenizer(), chunkSize, 0, nil)
	if err != nil {
		return err
	}
	docs := make([]embedder.Document, len(corpus))
	nChunks := 0
	for i, d := range corpus {
		text := d.Title + "\n\n" + d.Text
		cs, err := ch.Chunk(ctx, text)
		if err != nil {
			return fmt.Errorf("doc %s: %w", d.ID, err)
		}
		docs[i] = embedder.Document{Text: text, Chunks: cs}
		nChunks += len(cs)
	}
	if spansOut != "" {
		if err := writeSpans(spansOut, corpus, docs); err != nil {
			return err
		}
	}
	fixed, err := load(32)
	if err != nil {
		return err
	}
	defer fixed.Close()
	// Warm-up of both sessions.
	for _, mm := range []*embedder.Model{m, fixed} {
		if _, err := mm.EmbedDocuments(ctx, docs[:min(4, len(docs))], embedder.Naive); err != nil {
			return err
		}
	}
	measure := func(name string, mm *embedder.Model, mode embedder.Mode) error {
		t0, c0, k0 := time.Now(), cpuSeconds(), mm.Stats().Tokens
		vecs, err := mm.EmbedDocuments(ctx, docs, mode)
		if err != nil {
			return err
		}
		wall, cpu, tok := time.Since(t0).Seconds(), cpuSeconds()-c0, mm.Stats().Tokens-k0
		if len(vecs) != len(docs) {
			return fmt.Errorf("%s: %d results for %d documents", name, len(vecs), len(docs))
		}
		if name == "naive" && vectorsOut != "" {
			if err := writeVectors(vectorsOut, vecs); err != nil {
				return err
			}
		}
		return enc.Encode(result{Impl: "go", Phase: name, Tokens: tok, Chunks: nChunks, WallS: wall, CPUS: cpu,
			TokensPerS: float64(tok) / wall, TokensCPU: float64(tok) / cpu})
	}
	// Whole abstracts (variable length, cut at 512 tokens) as single chunks: where padding
	// in fixed-order batches costs most.
	whole := make([]embedder.Document, len(docs))
	for i, d := range docs {
		whole[i] = embedder.Document{Text: d.Text, Chunks: []chunkers.Chunk{{Start: 0, End: len(d.Text)}}}
	}
	measureDocs := func(name string, mm *embedder.Model) error {
		t0, c0, k0 := time.Now(), cpuSeconds(), mm.Stats().Tokens
		if _, err := mm.EmbedDocuments(ctx, whole, embedder.Naive); err != nil {
			return err
		}
		wall, cpu, tok := time.Since(t0).Seconds(), cpuSeconds()-c0, mm.Stats().Tokens-k0
		return enc.Encode(result{Impl: "go", Phase: name, Tokens: tok, Chunks: len(whole), WallS: wall, CPUS: cpu,
			TokensPerS: float64(tok) / wall, TokensCPU: float64(tok) / cpu})
	}
	if err := measureDocs("whole-docs", m); err != nil {
		return err
	}
	if err := measureDocs("whole-docs-fixed32", fixed); err != nil {
		return err
	}
	if err := measure("naive", m, embedder.Naive); err != nil {
		return err
	}
	if err := measure("naive-fixed32", fixed, embedder.Naive); err != nil {
		return err
	}
	if err := measure("late", m, embedder.Late); err != nil {
		return err
	}
	return measure("late-fixed32", fixed, embedder.Late)
}

// writeVectors writes all chunk vectors in document and chunk order as float32 LE.
func writeVectors(path string, vecs [][][]float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, d := range vecs {
		for _, v := range d {
			if err := binary.Write(w, binary.LittleEndian, v); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeSpans writes {"id","text","spans":[[start,end],...]} per document (byte offsets).
func writeSpans(path string, corpus []doc, docs []embedder.Document) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i, d := range docs {
		sp := make([][2]int, len(d.Chunks))
		for k, c := range d.Chunks {
			sp[k] = [2]int{c.Start, c.End}
		}
		if err := enc.Encode(map[string]any{"id": corpus[i].ID, "text": d.Text, "spans": sp}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// memoryRun late-embeds the QMSum meeting whose word count is closest to 12,000, chunked
// into 256-token Recursive chunks, and reports the process's peak RSS before and after.
func memoryRun(ctx context.Context, modelDir string, opts embedder.Options, data string, enc *json.Encoder) error {
	m, err := embedder.Load(modelDir, opts)
	if err != nil {
		return err
	}
	defer m.Close()
	meetings, err := readCorpus(filepath.Join(data, "qmsum", "corpus.jsonl"), 0)
	if err != nil {
		return err
	}
	best, bestDiff := -1, 1<<30
	for i, d := range meetings {
		if diff := abs(len(strings.Fields(d.Text)) - 12000); diff < bestDiff {
			best, bestDiff = i, diff
		}
	}
	text, id := meetings[best].Text, meetings[best].ID
	words := len(strings.Fields(text))
	meetings = nil
	runtime.GC()
	ch, err := chunkers.NewRecursive(m.Tokenizer(), 256, 0, nil)
	if err != nil {
		return err
	}
	cs, err := ch.Chunk(ctx, text)
	if err != nil {
		return err
	}
	before := peakRSS()
	t0, c0, k0 := time.Now(), cpuSeconds(), m.Stats().Tokens
	vecs, err := m.EmbedChunks(ctx, text, cs, embedder.Late)
	if err != nil {
		return err
	}
	wall, cpu, tok := time.Since(t0).Seconds(), cpuSeconds()-c0, m.Stats().Tokens-k0
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return enc.Encode(result{Impl: "go", Phase: "qmsum-late-memory", Tokens: tok, Chunks: len(vecs), WallS: wall, CPUS: cpu,
		TokensPerS: float64(tok) / wall, TokensCPU: float64(tok) / cpu, PeakRSSMiB: peakRSS(),
		Note: fmt.Sprintf("meeting %s: %d words, %d document tokens; peak RSS before embedding %.0f MiB (model loaded); Go heap after %.0f MiB",
			id, words, m.Tokenizer().Size(text), before, float64(ms.HeapAlloc)/(1<<20))})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
