package embedder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/ort"
)

// scifactChunks cuts SciFact abstracts into Fixed chunks of size tokens of m's tokenizer and
// returns the documents holding the first n chunks.
func scifactChunks(t *testing.T, m *Model, size, n int) []Document {
	t.Helper()
	ch, err := chunkers.NewFixed(m.Tokenizer(), size, 0)
	if err != nil {
		t.Fatal(err)
	}
	docs, got := sciFactDocs(t, ch, n, n)
	if got != n {
		t.Fatalf("%d chunks from SciFact, want %d", got, n)
	}
	return docs
}

// TestFP16MatchesFP32 embeds the same SciFact chunks with a folder's fp32 model.onnx and its
// fp16 variant (hack/export-model/fp16.py) and requires cosine >= 0.999 for every chunk, naive
// and late: the quality bar for the half-precision path. all-MiniLM-L6-v2 on 1,000
// chunks; bge-small-en-v1.5 and e5-small-v2 (12 layers, slower on 2 CPU cores) on 100.
// ONNX Runtime's CPU provider runs the fp16 graph; on CUDA hack/bench-embedder/gpu.sh checks
// the same bar.
func TestFP16MatchesFP32(t *testing.T) {
	need(t, ort.EnvLibrary, prepORT)
	cases := []struct {
		dir    string
		chunks int
	}{
		{need(t, "RAGOPS_MODEL_DIR", prepModel), 1000},
		{need(t, "RAGOPS_BGE_SMALL_DIR", prepModels), 100},
		{need(t, "RAGOPS_E5_SMALL_DIR", prepModels), 100},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			var models [2]*Model
			for i, p := range []Precision{FP32, FP16} {
				m, err := Load(c.dir, Options{Precision: p, IntraOpThreads: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				models[i] = m
			}
			docs := scifactChunks(t, models[0], 128, c.chunks)
			for _, mode := range []Mode{Naive, Late} {
				var want, got [][][]float32
				for i, out := range []*[][][]float32{&want, &got} {
					v, err := models[i].EmbedDocuments(ctx, docs, mode)
					if err != nil {
						t.Fatal(err)
					}
					*out = v
				}
				worst, sum, n := 1.0, 0.0, 0
				for d := range want {
					for k := range want[d] {
						cs := cosine(want[d][k], got[d][k])
						worst, sum, n = min(worst, cs), sum+cs, n+1
						if cs < 0.999 {
							t.Errorf("%v doc %d chunk %d: fp16 vs fp32 cosine %.6f < 0.999", mode, d, k, cs)
						}
					}
				}
				if n != c.chunks {
					t.Fatalf("%v: compared %d chunks, want %d", mode, n, c.chunks)
				}
				t.Logf("%v: %d chunks, fp16 vs fp32 cosine min %.6f mean %.6f", mode, n, worst, sum/float64(n))
			}
		})
	}
}

// TestPrecisionVariantMissing: asking for fp16 from a folder whose ragops.json names no
// variant (the int8 e5 folder) fails at Load and says how to export one; a cross-encoder
// refuses fp16; an unknown precision is refused before any file is read.
func TestPrecisionVariantMissing(t *testing.T) {
	need(t, ort.EnvLibrary, prepORT)
	_, err := Load(need(t, "RAGOPS_E5_SMALL_INT8_DIR", prepModels), Options{Precision: FP16})
	if err == nil || !strings.Contains(err.Error(), "no fp16 variant") || !strings.Contains(err.Error(), "fp16.py") {
		t.Fatalf("fp16 from the int8 folder: err = %v, want no fp16 variant ... fp16.py", err)
	}
	if _, err := Load(modelDir(t), Options{Precision: "bf16"}); err == nil || !strings.Contains(err.Error(), `precision "bf16"`) {
		t.Fatalf("bf16: err = %v", err)
	}
	if _, err := LoadCrossEncoder(need(t, "RAGOPS_RERANK_MODEL_DIR", "run hack/prepare.d/reranker.sh"), Options{Precision: FP16}); err == nil || !strings.Contains(err.Error(), "only fp32") {
		t.Fatalf("fp16 cross-encoder: err = %v", err)
	}
}

// TestPrecisionsConfigChecked: ragops.json "precisions" may only name files inside the folder.
func TestPrecisionsConfigChecked(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(modelDir(t), ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"fp16": "../model.onnx"}`, `{"fp32": "model.onnx"}`, `{"fp16": ""}`} {
		dir := t.TempDir()
		raw := strings.Replace(string(src), `"precisions": {`, `"old": {`, 1)
		raw = strings.Replace(raw, `"name":`, `"precisions": `+bad+`, "name":`, 1)
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "precisions[") {
			t.Errorf("precisions %s: err = %v, want precisions[...] refused", bad, err)
		}
	}
}

// TestOverlapGivesIdenticalVectors: the pipelined encoder (Options.Overlap, on by default
// with CUDA) hands every batch's states to pooling in order and changes no value: naive and late
// vectors of SciFact chunks, split over many small batches, are bit for bit those of the
// sequential encoder. A cancelled context stops it with the context's error.
func TestOverlapGivesIdenticalVectors(t *testing.T) {
	seq := load(t, Options{BatchTokens: 512})
	ovl := load(t, Options{BatchTokens: 512, Overlap: OverlapOn})
	docs := scifactChunks(t, seq, 64, 300)
	ctx := context.Background()
	for _, mode := range []Mode{Naive, Late} {
		want, err := seq.EmbedDocuments(ctx, docs, mode)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ovl.EmbedDocuments(ctx, docs, mode)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for d := range want {
			for k := range want[d] {
				for j := range want[d][k] {
					if want[d][k][j] != got[d][k][j] {
						t.Fatalf("%v doc %d chunk %d: component %d is %v overlapped, %v sequential", mode, d, k, j, got[d][k][j], want[d][k][j])
					}
				}
				n++
			}
		}
		if n != 300 {
			t.Fatalf("%v: compared %d chunks, want 300", mode, n)
		}
	}
	var texts []string
	for _, d := range docs {
		for _, c := range d.Chunks {
			texts = append(texts, c.EmbedText(d.Text))
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ovl.EmbedTexts(cctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("EmbedTexts with a cancelled context: err = %v, want context.Canceled", err)
	}
}
