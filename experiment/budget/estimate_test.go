package budget

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/reader/beir"
)

const (
	prepMiniLM = "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints"
	prepME5    = "run hack/export-model/models.sh and set RAGOPS_ME5_SMALL_DIR"
)

// corpus reads a BEIR corpus.jsonl of the shared data sets: its documents with their lines'
// sizes (newline included, so they sum to the file's size) and the population.
func corpus(t testing.TB, name string) ([]Document, Population) {
	t.Helper()
	dir := os.Getenv("RAGOPS_DATASETS")
	if dir == "" {
		dir = filepath.Join(testenv.ModuleRoot(), "..", "shared", "datasets")
	}
	path := filepath.Join(dir, name, "corpus.jsonl")
	f, err := os.Open(path)
	if err != nil {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("%v (RAGOPS_DATASETS or ../shared/datasets)", err)
		}
		t.Skipf("%v (RAGOPS_DATASETS or ../shared/datasets)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, beir.MaxLineBytes)
	var docs []Document
	var pop Population
	for sc.Scan() {
		line := sc.Bytes()
		pop.Bytes += int64(len(line)) + 1
		id, doc, _, err := beir.ParseLine(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, Document{Unit: Unit{Key: id, Bytes: int64(len(line)) + 1}, Doc: doc})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != pop.Bytes {
		t.Fatalf("lines sum to %d bytes, the file has %d", pop.Bytes, st.Size())
	}
	pop.Documents = int64(len(docs))
	return docs, pop
}

// sampled returns the documents of docs that Sample picks.
func sampled(docs []Document, fraction float64, seed int64) []Document {
	units := make([]Unit, len(docs))
	byKey := map[string]Document{}
	for i, d := range docs {
		units[i] = d.Unit
		byKey[d.Unit.Key] = d
	}
	var out []Document
	for _, u := range Sample(units, fraction, seed) {
		out = append(out, byKey[u.Key])
	}
	return out
}

func TestSampleIsSeededAndNested(t *testing.T) {
	var units []Unit
	for i := range 1000 {
		units = append(units, Unit{Key: fmt.Sprintf("doc-%d", i), Bytes: int64(i)})
	}
	a, b := Sample(units, 0.05, 7), Sample(units, 0.05, 7)
	if len(a) != 50 || !slices.Equal(a, b) {
		t.Fatalf("seed 7: %d units, repeatable %v", len(a), slices.Equal(a, b))
	}
	if c := Sample(units, 0.05, 8); slices.Equal(a, c) {
		t.Error("seeds 7 and 8 give the same sample")
	}
	if big := Sample(units, 0.2, 7); !slices.Equal(big[:50], a) {
		t.Error("a larger fraction is not a superset beginning with the smaller sample")
	}
	reversed := slices.Clone(units)
	slices.Reverse(reversed)
	if r := Sample(reversed, 0.05, 7); !slices.Equal(r, a) {
		t.Error("the sample depends on the listing's order")
	}
	if one := Sample(units, 0.0001, 7); len(one) != 1 {
		t.Errorf("a tiny fraction gives %d units, want 1", len(one))
	}
	// Uniform: the sample's mean key index is near the population's (499.5), within 4 standard
	// errors (sd 288.7/sqrt(50) x finite-population correction ~ 39.8).
	var sum float64
	for _, u := range a {
		sum += float64(u.Bytes)
	}
	if mean := sum / 50; math.Abs(mean-499.5) > 4*39.8 {
		t.Errorf("sample mean index %.1f, population 499.5", mean)
	}
}

// strategies are the three the accuracy test measures: naive fixed windows with overlap,
// naive sentence packing, and late chunking over recursive splits (macro windows of 256).
var strategies = []struct {
	name string
	spec ragopsv1alpha1.ChunkingStrategySpec
}{
	{"fixed-256-o32", ragopsv1alpha1.ChunkingStrategySpec{Type: "Fixed", Unit: "Tokens", Size: 256, Overlap: 32}},
	{"sentence-128", ragopsv1alpha1.ChunkingStrategySpec{Type: "Sentence", Unit: "Tokens", Size: 128}},
	{"recursive-128-late256", ragopsv1alpha1.ChunkingStrategySpec{Type: "Recursive", Unit: "Tokens", Size: 128,
		Late: &ragopsv1alpha1.LateChunkingOptions{Enabled: true, Window: 256, WindowOverlap: 64}}},
}

// TestEstimateAccuracyOnSciFact compares the estimate from a seeded 5% sample of SciFact's
// 5,183 abstracts with the exact count over every document (the same counting with the whole
// corpus as the sample) for three strategies with all-MiniLM-L6-v2's tokenizer.
func TestEstimateAccuracyOnSciFact(t *testing.T) {
	m, err := LoadModel(testenv.Need(t, "RAGOPS_MODEL_DIR", prepMiniLM))
	if err != nil {
		t.Fatal(err)
	}
	docs, pop := corpus(t, "scifact")
	sample := sampled(docs, 0.05, 1)
	ctx := context.Background()
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			exact, err := EstimateTokens(ctx, s.spec, m, docs, pop)
			if err != nil {
				t.Fatal(err)
			}
			if exact.Tokens != exact.SampleTokens || exact.RelativeStandardError != 0 {
				t.Fatalf("the whole corpus as the sample: %d tokens estimated from %d, RSE %g", exact.Tokens, exact.SampleTokens, exact.RelativeStandardError)
			}
			est, err := EstimateTokens(ctx, s.spec, m, sample, pop)
			if err != nil {
				t.Fatal(err)
			}
			rel := float64(est.Tokens-exact.Tokens) / float64(exact.Tokens)
			relChunks := float64(est.Chunks-exact.Chunks) / float64(exact.Chunks)
			t.Logf("%s: exact %d tokens (%d chunks); 5%% sample (%d documents, %d bytes of %d) estimates %d tokens (%d chunks): error %+.2f%% (chunks %+.2f%%), estimated RSE %.2f%%",
				s.name, exact.Tokens, exact.Chunks, est.SampleDocuments, est.SampleBytes, pop.Bytes, est.Tokens, est.Chunks, 100*rel, 100*relChunks, 100*est.RelativeStandardError)
			if est.SampleDocuments != 259 || est.ScaledBy != "bytes" {
				t.Errorf("sample of %d documents scaled by %s, want 259 by bytes", est.SampleDocuments, est.ScaledBy)
			}
			if math.Abs(rel) > 0.03 {
				t.Errorf("relative error %.2f%% above 3%%", 100*rel)
			}
			// The reported standard error is honest: the error is within 3 of them.
			if math.Abs(rel) > 3*est.RelativeStandardError {
				t.Errorf("error %.2f%% is more than 3 estimated standard errors (%.2f%%)", 100*rel, 100*est.RelativeStandardError)
			}
			if est.RelativeStandardError <= 0 || est.RelativeStandardError > 0.05 {
				t.Errorf("estimated RSE %.3f%%", 100*est.RelativeStandardError)
			}
		})
	}
}

// TestCountsEqualTheEmbedders checks the tokenizer-only count against the embedder's own
// DocumentTokens (what a build adds to a revision's tokens) on real documents: SciFact with
// all-MiniLM-L6-v2, and long Dutch laws with multilingual-e5-small, whose "passage: " document
// prefix and SentencePiece tokenizer exercise the prefix and many macro windows.
func TestCountsEqualTheEmbedders(t *testing.T) {
	testenv.Need(t, "RAGOPS_ONNXRUNTIME_LIB", "run hack/provision-onnxruntime.sh")
	cases := []struct {
		env, how, dataset string
		n                 int
	}{
		{"RAGOPS_MODEL_DIR", prepMiniLM, "scifact", 40},
		{"RAGOPS_ME5_SMALL_DIR", prepME5, "legalqa-nl", 6},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.dataset, func(t *testing.T) {
			dir := testenv.Need(t, tc.env, tc.how)
			m, err := LoadModel(dir)
			if err != nil {
				t.Fatal(err)
			}
			docs, _ := corpus(t, tc.dataset)
			docs = sampled(docs, float64(tc.n)/float64(len(docs)), 3)
			specs := []ragopsv1alpha1.ChunkingStrategySpec{
				{Type: "Fixed", Unit: "Tokens", Size: 509, Overlap: 50}, // with "passage: " (3 tokens) cut to the 510 content positions
				{Type: "Recursive", Unit: "Tokens", Size: 200},
				{Type: "Recursive", Unit: "Tokens", Size: 200, Late: &ragopsv1alpha1.LateChunkingOptions{Enabled: true, Window: 512, WindowOverlap: 128}},
				{Type: "Heading", Unit: "Tokens", Size: 300, Heading: &ragopsv1alpha1.HeadingOptions{Markdown: ptr.To(true), PathPrefix: true}},
				{Type: "Fixed", Unit: "Tokens", Size: 100, Late: &ragopsv1alpha1.LateChunkingOptions{Enabled: true, Window: 128}}, // overlap 0: half the window
			}
			for _, spec := range specs {
				var o embedder.Options
				mode := embedder.Naive
				if spec.Late != nil {
					mode, o.WindowTokens, o.WindowOverlap = embedder.Late, int(spec.Late.Window), int(spec.Late.WindowOverlap)
				}
				o.IntraOpThreads = 1
				em, err := embedder.Load(dir, o)
				if err != nil {
					t.Fatal(err)
				}
				c, err := registry.New(spec, em.Tokenizer(), em)
				if err != nil {
					t.Fatal(err)
				}
				cnt, err := newCounter(spec, m)
				if err != nil {
					t.Fatal(err)
				}
				var ours, theirs int64
				for _, d := range docs {
					chunks, err := docchunk.Chunk(ctx, c, d.Doc)
					if err != nil {
						t.Fatal(err)
					}
					got := cnt.tokens(d.Doc.Text, chunks)
					want := em.DocumentTokens([]embedder.Document{{Text: d.Doc.Text, Chunks: chunks}}, mode)
					if got != want {
						t.Errorf("%s %+v: document %s: %d tokens, the embedder encodes %d", tc.dataset, spec, d.Unit.Key, got, want)
					}
					ours, theirs = ours+got, theirs+want
				}
				t.Logf("%s %s size %d late %v: %d tokens over %d documents (embedder %d)", tc.dataset, spec.Type, spec.Size, spec.Late != nil, ours, len(docs), theirs)
				_ = em.Close()
			}
		})
	}
}

func TestEstimateRefusesWhatABuildRefuses(t *testing.T) {
	m, err := LoadModel(testenv.Need(t, "RAGOPS_MODEL_DIR", prepMiniLM))
	if err != nil {
		t.Fatal(err)
	}
	docs, pop := corpus(t, "scifact")
	ctx := context.Background()
	if _, err := EstimateTokens(ctx, ragopsv1alpha1.ChunkingStrategySpec{Type: "Semantic", Unit: "Tokens", Size: 200}, m, docs[:3], pop); err != ErrNeedsEmbedder {
		t.Errorf("semantic without an embedder: %v", err)
	}
	late := ragopsv1alpha1.ChunkingStrategySpec{Type: "Fixed", Unit: "Tokens", Size: 100, Late: &ragopsv1alpha1.LateChunkingOptions{Enabled: true, Window: 1024, WindowOverlap: 128}}
	if _, err := EstimateTokens(ctx, late, m, docs[:3], pop); err == nil || !strings.Contains(err.Error(), "512 positions") {
		t.Errorf("a window above the positions: %v", err)
	}
	if _, err := EstimateTokens(ctx, strategies[0].spec, m, nil, pop); err == nil {
		t.Error("an empty sample estimated something")
	}
	// Without sizes the sample scales by documents.
	unsized := slices.Clone(docs[:100])
	for i := range unsized {
		unsized[i].Unit.Bytes = 0
	}
	est, err := EstimateTokens(ctx, strategies[0].spec, m, unsized, Population{Documents: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if est.ScaledBy != "documents" || est.Tokens != est.SampleTokens*10 {
		t.Errorf("scaled by %s: %d from %d", est.ScaledBy, est.Tokens, est.SampleTokens)
	}
}

func TestCheckAndMessage(t *testing.T) {
	est := Estimate{Tokens: 1_412_000, SampleDocuments: 259, Population: Population{Documents: 5183}, ScaledBy: "bytes", RelativeStandardError: 0.012}
	if d := Check("t", nil, 1<<40, 0, est); !d.Fits {
		t.Error("no budget refused a trial")
	}
	fits := Check("t", ptr.To[int64](5_000_000), 3_000_000, 500_000, est)
	if !fits.Fits || fits.Left != 1_500_000 {
		t.Errorf("1,412,000 in 1,500,000 left: %+v", fits)
	}
	d := Check("sweep-fixed-512-minilm", ptr.To[int64](5_000_000), 3_600_000, 500_000, est)
	if d.Fits || d.Left != 900_000 {
		t.Fatalf("1,412,000 in 900,000 left: %+v", d)
	}
	want := "trial sweep-fixed-512-minilm not started: it needs about 1,412,000 tokens (estimated from 259 of 5,183 documents, scaled by bytes, ±1.2%), 900,000 of the budget's 5,000,000 are left (3,600,000 spent, 500,000 held by running trials)"
	if got := d.Message(); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	over := Check("t", ptr.To[int64](100), 150, 0, Estimate{Tokens: 1})
	if over.Fits || !strings.Contains(over.Message(), "0 of the budget's 100 are left (150 spent") {
		t.Errorf("overspent: %+v %s", over, over.Message())
	}
	for n, s := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != s {
			t.Errorf("thousands(%d) = %q, want %q", n, got, s)
		}
	}
}
