package embedder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/embedder/tokenize"
)

const (
	prepModel = "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints"
	prepORT   = "run hack/provision-onnxruntime.sh and set RAGOPS_ONNXRUNTIME_LIB to the path it prints"
)

var _ chunkers.Sizer = (*tokenize.Tokenizer)(nil)
var _ chunkers.SentenceEmbedder = (*Model)(nil)

func need(t testing.TB, env, how string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("%s is not set: %s", env, how)
		}
		t.Skipf("%s is not set: %s", env, how)
	}
	return v
}

func modelDir(t testing.TB) string {
	t.Helper()
	need(t, ort.EnvLibrary, prepORT)
	return need(t, "RAGOPS_MODEL_DIR", prepModel)
}

func load(t testing.TB, opts Options) *Model {
	t.Helper()
	if opts.IntraOpThreads == 0 {
		opts.IntraOpThreads = 1
	}
	m, err := Load(modelDir(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func datasets(t testing.TB) string {
	if d := os.Getenv("RAGOPS_DATASETS"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..", "shared", "datasets")
}

type beirDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// readCorpus returns the first n documents of a BEIR corpus.jsonl in ../shared/datasets.
func readCorpus(t testing.TB, name string, n int) []beirDoc {
	t.Helper()
	p := filepath.Join(datasets(t), name, "corpus.jsonl")
	f, err := os.Open(p)
	if err != nil {
		t.Fatalf("%v (set RAGOPS_DATASETS to the datasets folder)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var out []beirDoc
	for sc.Scan() && len(out) < n {
		var d beirDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// TestReferenceEmbeddings compares the Go pipeline (tokenizer + ORT + pooling) with the
// reference embeddings hack/export-model wrote for real SciFact sentences.
func TestReferenceEmbeddings(t *testing.T) {
	m := load(t, Options{})
	f, err := os.Open(filepath.Join(modelDir(t), "reference", "embeddings.jsonl"))
	if err != nil {
		t.Fatalf("%v: %s", err, prepModel)
	}
	defer f.Close()
	var texts []string
	var want [][]float32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			Text      string    `json:"text"`
			Embedding []float32 `json:"embedding"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, r.Text)
		want = append(want, r.Embedding)
	}
	if len(texts) < 100 {
		t.Fatalf("%d reference sentences, want >= 100", len(texts))
	}
	got, err := m.EmbedTexts(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 1.0
	for i := range texts {
		if len(got[i]) != m.Dimension() {
			t.Fatalf("vector %d has %d dimensions, want %d", i, len(got[i]), m.Dimension())
		}
		c := cosine(got[i], want[i])
		worst = min(worst, c)
		if c < 0.9999 {
			t.Errorf("sentence %d %q: cosine %.6f < 0.9999", i, texts[i][:min(60, len(texts[i]))], c)
		}
	}
	// Different sentences must not all look alike (a constant output would pass above only
	// if the reference were constant too; this guards the reference itself).
	if c := cosine(want[0], want[1]); c > 0.95 {
		t.Errorf("reference sentences 0 and 1 have cosine %.4f: reference looks degenerate", c)
	}
	t.Logf("%d sentences, worst cosine %.7f", len(texts), worst)
}

// TestLateWholeSpanEqualsNaive: a late chunk that spans the whole input equals the naive
// embedding of that input.
func TestLateWholeSpanEqualsNaive(t *testing.T) {
	m := load(t, Options{})
	docs := readCorpus(t, "scifact", 12)
	ctx := context.Background()
	for _, d := range docs {
		text := d.Title + "\n\n" + d.Text
		if m.Tokenizer().Size(text) > m.Config().MaxPositions-2 {
			continue
		}
		whole := []chunkers.Chunk{{Start: 0, End: len(text)}}
		late, err := m.EmbedChunks(ctx, text, whole, Late)
		if err != nil {
			t.Fatal(err)
		}
		naive, err := m.EmbedChunks(ctx, text, whole, Naive)
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(late[0], naive[0]); c < 0.9999 {
			t.Errorf("doc %s: late vs naive cosine %.6f < 0.9999", d.ID, c)
		}
	}
}

// TestPaddingDoesNotChangeOutputs embeds texts of very different lengths one per batch and
// all in one padded batch (and in fixed-order batches of 3).
func TestPaddingDoesNotChangeOutputs(t *testing.T) {
	docs := readCorpus(t, "scifact", 10)
	var texts []string
	for i, d := range docs {
		texts = append(texts, d.Text[:min(len(d.Text), 40+i*120)])
	}
	ctx := context.Background()
	single := load(t, Options{MaxBatch: 1})
	batched := load(t, Options{})
	fixed := load(t, Options{FixedBatch: 3})
	a, err := single.EmbedTexts(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []*Model{batched, fixed} {
		b, err := other.EmbedTexts(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			maxDiff := 0.0
			for j := range a[i] {
				maxDiff = max(maxDiff, math.Abs(float64(a[i][j]-b[i][j])))
			}
			if maxDiff > 1e-5 {
				t.Errorf("text %d: padded batch differs by %.2e", i, maxDiff)
			}
		}
	}
}

// TestTokenRangeExactAtBoundaries: spans cut exactly at token boundaries map to exactly those
// tokens, on text with multibyte characters (Dutch diacritics, CJK, emoji, NBSP).
func TestTokenRangeExactAtBoundaries(t *testing.T) {
	m := load(t, Options{})
	text := "Coördinatie van de ruïne: één café\u00a0en 中文分词 😀 test — Beslispunt 2. " +
		"Zij zeiden „akkoord”; İstanbul ŞEHİR. Über Größe. 👍🏽 emoji."
	enc := m.Tokenizer().Encode(text, false)
	n := len(enc.Offsets)
	if n < 30 {
		t.Fatalf("only %d tokens", n)
	}
	multibyte := 0
	for i := 0; i < n; i++ {
		for j := i + 1; j <= n; j++ {
			// Span from token i's first byte to the start of token j (or the text's end):
			// whitespace between tokens belongs to the span, as chunkers produce it.
			end := len(text)
			if j < n {
				end = enc.Offsets[j].Start
			}
			a, b, ok := TokenRange(enc.Offsets, chunkers.Span{Start: enc.Offsets[i].Start, End: end})
			if !ok || a != i || b != j {
				t.Fatalf("span [%d,%d) %q -> tokens [%d,%d) ok=%v, want [%d,%d)", enc.Offsets[i].Start, end, text[enc.Offsets[i].Start:end], a, b, ok, i, j)
			}
			// Tight span: first byte of token i to last byte of token j-1.
			a, b, _ = TokenRange(enc.Offsets, chunkers.Span{Start: enc.Offsets[i].Start, End: enc.Offsets[j-1].End})
			if a != i || b != j {
				t.Fatalf("tight span of tokens [%d,%d) -> [%d,%d)", i, j, a, b)
			}
		}
		if o := enc.Offsets[i]; len([]rune(text[o.Start:o.End])) < o.End-o.Start {
			multibyte++
		}
	}
	if multibyte < 8 {
		t.Errorf("only %d tokens contain multibyte characters", multibyte)
	}
	// A span inside one token maps to that token; a whitespace-only span to none.
	k := 3
	o := enc.Offsets[k]
	if a, b, ok := TokenRange(enc.Offsets, chunkers.Span{Start: o.Start + 1, End: o.End}); o.End-o.Start > 1 && (!ok || a != k || b != k+1) {
		t.Errorf("span inside token %d -> [%d,%d) ok=%v", k, a, b, ok)
	}
	sp := strings.Index(text, " van")
	if _, _, ok := TokenRange(enc.Offsets, chunkers.Span{Start: sp, End: sp + 1}); ok {
		t.Errorf("a whitespace-only span mapped to a token")
	}
}

// TestLongLateChunking: three SciFact abstracts concatenated and encoded in 128-token
// windows; each abstract's late vector must be closest to its own naive vector, and equal
// to within rounding the single-pass result when the windows cover the document.
func TestLongLateChunking(t *testing.T) {
	text, parts := threeAbstracts(t)
	var chunks []chunkers.Chunk
	pos := 0
	for i, p := range parts {
		chunks = append(chunks, chunkers.Chunk{Ordinal: i, Start: pos, End: pos + len(p)})
		pos += len(p) + 2
	}
	ctx := context.Background()
	small := load(t, Options{WindowTokens: 128, WindowOverlap: 32})
	if n := small.Tokenizer().Size(text); n < 250 || n > 510 {
		t.Fatalf("test document has %d tokens, want 250..510 (several 128-token windows, one 512 pass)", n)
	}
	late, err := small.EmbedChunks(ctx, text, chunks, Late)
	if err != nil {
		t.Fatal(err)
	}
	naive, err := small.EmbedChunks(ctx, text, chunks, Naive)
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		own := cosine(late[i], naive[i])
		for j := range chunks {
			if j != i && cosine(late[i], naive[j]) >= own {
				t.Errorf("late chunk %d is closer to naive chunk %d (%.4f) than to its own (%.4f)", i, j, cosine(late[i], naive[j]), own)
			}
		}
	}
	full := load(t, Options{})
	one, err := full.EmbedChunks(ctx, text, chunks, Late)
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		t.Logf("chunk %d: 128-token windows vs one pass cosine %.4f; late vs naive: windows %.4f, one pass %.4f",
			i, cosine(one[i], late[i]), cosine(late[i], naive[i]), cosine(one[i], naive[i]))
	}

	// Window assembly: a chunk made of the tokens that the middle window serves must equal
	// the mean of that window's own states at those positions.
	enc := small.Tokenizer().Encode(text, false)
	wins := planWindows(len(enc.IDs), 126, 32)
	best := bestWindow(len(enc.IDs), wins)
	w := len(wins) / 2
	a, b := -1, -1
	for i, bw := range best {
		if bw == w {
			if a < 0 {
				a = i
			}
			b = i + 1
		}
	}
	if a <= 0 || b >= len(enc.IDs) || b-a < 20 {
		t.Fatalf("middle window %d serves tokens [%d,%d) of %d", w, a, b, len(enc.IDs))
	}
	span := chunkers.Chunk{Start: enc.Offsets[a].Start, End: enc.Offsets[b-1].End}
	got, err := small.EmbedChunks(ctx, text, []chunkers.Chunk{span}, Late)
	if err != nil {
		t.Fatal(err)
	}
	st, err := small.runBatch(ctx, [][]int64{small.wrap(enc.IDs[wins[w][0]:wins[w][1]])})
	if err != nil {
		t.Fatal(err)
	}
	d := small.Dimension()
	want := make([]float32, d)
	meanInto(want, st[0], d, 1+a-wins[w][0], 1+b-wins[w][0])
	if c := cosine(got[0], want); c < 0.9999 {
		t.Errorf("tokens [%d,%d) from window %v: cosine %.6f with the window's own states", a, b, wins[w], c)
	}
}

func TestPlanWindows(t *testing.T) {
	for _, tc := range []struct{ n, size, overlap int }{{10, 20, 5}, {1000, 510, 255}, {511, 510, 255}, {16000, 510, 128}, {300, 126, 32}} {
		wins := planWindows(tc.n, tc.size, tc.overlap)
		if wins[0][0] != 0 || wins[len(wins)-1][1] != tc.n {
			t.Fatalf("%+v: windows %v do not cover [0,%d)", tc, wins, tc.n)
		}
		for k, w := range wins {
			if w[1]-w[0] > tc.size || w[0] < 0 {
				t.Fatalf("%+v: window %v longer than %d", tc, w, tc.size)
			}
			if k > 0 && w[0] > wins[k-1][1]-tc.overlap {
				t.Fatalf("%+v: window %v overlaps the previous %v by less than %d", tc, w, wins[k-1], tc.overlap)
			}
		}
		best := bestWindow(tc.n, wins)
		for i, w := range best {
			if i < wins[w][0] || i >= wins[w][1] {
				t.Fatalf("%+v: token %d assigned to window %v that lacks it", tc, i, wins[w])
			}
			// No other window gives the token strictly more context.
			ctxOf := func(win [2]int) int {
				l, r := i-win[0], win[1]-1-i
				if win[0] == 0 {
					l = tc.n
				}
				if win[1] == tc.n {
					r = tc.n
				}
				return min(l, r)
			}
			for _, o := range wins {
				if i >= o[0] && i < o[1] && ctxOf(o) > ctxOf(wins[w]) {
					t.Fatalf("%+v: token %d has more context in %v than in chosen %v", tc, i, o, wins[w])
				}
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	m := load(t, Options{})
	ctx := context.Background()
	if _, err := m.EmbedChunks(ctx, "short text", []chunkers.Chunk{{Ordinal: 4, Start: 2, End: 99}}, Naive); err == nil || !strings.Contains(err.Error(), "chunk 4") {
		t.Errorf("out-of-range chunk: err = %v, want one naming chunk 4", err)
	}
	if _, err := m.EmbedChunks(ctx, "a   b", []chunkers.Chunk{{Ordinal: 1, Start: 1, End: 4}}, Late); err == nil || !strings.Contains(err.Error(), "chunk 1") {
		t.Errorf("whitespace chunk in late mode: err = %v, want one naming chunk 1", err)
	}
	// The CPU build of ONNX Runtime has no CUDA execution provider.
	if _, err := Load(modelDir(t), Options{Device: CUDA, IntraOpThreads: 1}); err == nil || !strings.Contains(err.Error(), "CUDA") {
		t.Errorf("cuda without provider: err = %v, want a CUDA error", err)
	}
	fb, err := Load(modelDir(t), Options{Device: CUDA, AllowCPUFallback: true, IntraOpThreads: 1})
	if err != nil {
		t.Fatalf("cuda with CPU fallback: %v", err)
	}
	defer fb.Close()
	if !strings.HasPrefix(fb.Provider(), "cpu (CUDA fallback") {
		t.Errorf("Provider() = %q, want a CPU fallback note", fb.Provider())
	}
	if _, err := Load(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), ConfigFile) {
		t.Errorf("empty folder: err = %v, want one naming %s", err, ConfigFile)
	}
}

// TestQueryPrefix: with a query prefix in ragops.json, a query's vector equals the naive
// vector of prefix+query.
func TestQueryPrefix(t *testing.T) {
	src := modelDir(t)
	dir := t.TempDir()
	for _, f := range []string{"model.onnx", "tokenizer.json"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := ReadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QueryPrefix = "query: "
	raw, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir, Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	q := "Does vitamin D deficiency raise the risk of fractures?"
	ctx := context.Background()
	a, err := m.EmbedQueries(ctx, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.EmbedTexts(ctx, []string{"query: " + q, q})
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(a[0], b[0]); c < 0.9999 {
		t.Errorf("EmbedQueries vs prefixed text: cosine %.6f", c)
	}
	if c := cosine(a[0], b[1]); c > 0.9999 {
		t.Errorf("the query prefix changed nothing (cosine %.6f)", c)
	}
	// EncodeQuery (evaluator.QueryEncoder) is EmbedQueries of one query: prefixed too.
	if e, err := m.EncodeQuery(ctx, q); err != nil {
		t.Fatal(err)
	} else if c := cosine(e, b[0]); c < 0.9999 {
		t.Errorf("EncodeQuery vs prefixed text: cosine %.6f", c)
	}
}

func TestJSONLWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewJSONLWriter(&buf)
	text := "Eén zin. Twee zinnen."
	chunks := []chunkers.Chunk{{Ordinal: 0, Start: 0, End: 9}, {Ordinal: 1, Start: 10, End: len(text)}}
	if err := w.Write("d1", text, chunks, [][]float32{{1, 0}, {0, 1}}, Late); err != nil {
		t.Fatal(err)
	}
	if err := w.Write("d2", text, chunks, [][]float32{{1, 0}}, Late); err == nil {
		t.Error("mismatched vectors accepted")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	var r Record
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil {
		t.Fatal(err)
	}
	if r.DocID != "d1" || r.Text != "Twee zinnen." || r.Mode != "late" || len(r.Vector) != 2 || r.Vector[1] != 1 {
		t.Errorf("record %+v", r)
	}
}

// Stats times tokenizing and inference: both grow with a call, by at most the call's
// duration together (they run one after the other), and a late call adds to both too.
func TestStatsTimeTokenizingAndInference(t *testing.T) {
	m := load(t, Options{})
	ctx := context.Background()
	text := strings.Repeat("Vitamin D deficiency is associated with a higher risk of fractures in older adults. ", 20)
	start := time.Now()
	if _, err := m.EmbedTexts(ctx, []string{text, text[:200], "short"}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st := m.Stats()
	if st.TokenizeTime <= 0 || st.InferenceTime <= 0 {
		t.Fatalf("after EmbedTexts: tokenize %v, inference %v; want both > 0", st.TokenizeTime, st.InferenceTime)
	}
	if sum := st.TokenizeTime + st.InferenceTime; sum > took {
		t.Errorf("tokenize %v + inference %v = %v, more than the call's %v", st.TokenizeTime, st.InferenceTime, sum, took)
	}
	chunks := []chunkers.Chunk{{Ordinal: 0, Start: 0, End: 100}, {Ordinal: 1, Start: 100, End: len(text)}}
	if _, err := m.EmbedChunks(ctx, text, chunks, Late); err != nil {
		t.Fatal(err)
	}
	if late := m.Stats(); late.TokenizeTime <= st.TokenizeTime || late.InferenceTime <= st.InferenceTime {
		t.Errorf("a late call added nothing: tokenize %v -> %v, inference %v -> %v", st.TokenizeTime, late.TokenizeTime, st.InferenceTime, late.InferenceTime)
	}
}
