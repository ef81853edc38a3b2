package estimate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/pipeline/estimate"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// sciFactFolder writes the first n records of SciFact's corpus.jsonl into a BEIR folder.
func sciFactFolder(t *testing.T, n int) string {
	t.Helper()
	datasets := testenv.Need(t, "RAGOPS_DATASETS", "export RAGOPS_DATASETS=$(hack/datasets.sh)")
	f, err := os.Open(filepath.Join(datasets, "scifact", "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for i := 0; i < n && sc.Scan(); i++ {
		if _, err := out.Write(append(sc.Bytes(), '\n')); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// The estimate Job's figures: over the whole corpus (fraction 1) the estimate is the exact
// count, the same for every seed; a 10% sample is deterministic for its seed and lands within
// four of its own standard errors of the exact count (SciFact, 400 abstracts, MiniLM's
// tokenizer, Fixed 128 and Sentence 96 tokens); a trial whose model folder is missing gets its
// own error while the others are estimated.
func TestEstimateSampleAgainstTheWholeCorpus(t *testing.T) {
	model := testenv.Need(t, "RAGOPS_MODEL_DIR", "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints")
	dir := sciFactFolder(t, 400)
	trials := []plan.EstimateTrial{
		{Name: "fixed-128", Revision: "r1", ModelDir: model, Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 128, Overlap: 16}},
		{Name: "sentence-96", Revision: "r2", ModelDir: model, Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategySentence, Unit: ragopsv1alpha1.UnitTokens, Size: 96}},
		{Name: "no-model", Revision: "r3", ModelDir: filepath.Join(t.TempDir(), "missing"), Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 128}},
	}
	run := func(fraction float64, seed int64) plan.EstimateResult {
		t.Helper()
		p := plan.Estimate{Version: plan.Version, Source: plan.Source{Dir: dir, Format: ragopsv1alpha1.FormatBEIR, Include: []string{"corpus.jsonl"}},
			Seed: seed, Fraction: fraction, MinDocuments: 8, Trials: trials}
		res, err := estimate.Run(context.Background(), quiet, p, estimate.Options{WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if res.Documents != 400 || len(res.Trials) != 3 {
			t.Fatalf("%d documents listed, %d trials", res.Documents, len(res.Trials))
		}
		if res.Trials[2].Error == "" || res.Trials[2].Tokens != 0 {
			t.Fatalf("the trial without a model folder: %+v", res.Trials[2])
		}
		return res
	}
	exact := run(1, 1)
	if exact.SampleDocuments != 400 || run(1, 7).Trials[0].Tokens != exact.Trials[0].Tokens {
		t.Fatalf("a whole-corpus estimate depends on the seed or reads %d documents", exact.SampleDocuments)
	}
	a, b := run(0.1, 3), run(0.1, 3)
	if a.SampleDocuments != 40 {
		t.Fatalf("sample of %d documents, want 40", a.SampleDocuments)
	}
	for i := range 2 {
		e, s := exact.Trials[i], a.Trials[i]
		if e.Error != "" || s.Error != "" || e.Tokens <= 0 || s.Tokens != b.Trials[i].Tokens {
			t.Fatalf("%s: exact %+v, sample %+v, again %+v", e.Name, e, s, b.Trials[i])
		}
		rel := math.Abs(float64(s.Tokens-e.Tokens)) / float64(e.Tokens)
		if s.RelativeStandardError <= 0 || rel > 4*s.RelativeStandardError {
			t.Errorf("%s: sample estimate %d tokens, exact %d (%.2f%% off, RSE %.2f%%)", e.Name, s.Tokens, e.Tokens, 100*rel, 100*s.RelativeStandardError)
		}
		t.Logf("%s: exact %d tokens (%d chunks); 10%% sample %d (%.2f%% off, RSE %.2f%%)", e.Name, e.Tokens, e.Chunks, s.Tokens, 100*rel, 100*s.RelativeStandardError)
	}
}

// Issue 51, extraction cache: an estimate takes its sample from the Corpus's extraction cache
// that builds fill (and fills it): a second estimate of an unchanged corpus extracts nothing.
func TestEstimateReadsTheSampleFromTheExtractionCache(t *testing.T) {
	model := testenv.Need(t, "RAGOPS_MODEL_DIR", "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints")
	wv := weaviatetest.Start(t)
	dir := t.TempDir()
	for i := range 12 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%02d.md", i)), fmt.Appendf(nil, "# Besluit %d\n\nDe raad besluit over voorstel %d.", i, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Estimate{Version: plan.Version, Source: plan.Source{Dir: dir}, Seed: 1, Fraction: 1, MinDocuments: 1,
		Weaviate: &plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}, ExtractionCache: cache,
		Trials: []plan.EstimateTrial{{Name: "fixed-64", Revision: "r1", ModelDir: model,
			Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 64}}}}
	var tokens int64
	for i, want := range []ragopsv1alpha1.DocumentReads{{Extracted: 12, CacheMisses: 12}, {CacheHits: 12}} {
		res, err := estimate.Run(context.Background(), quiet, p, estimate.Options{WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reads == nil || *res.Reads != want || res.Trials[0].Error != "" {
			t.Errorf("estimate %d: reads %+v, trial %+v; want %+v", i+1, res.Reads, res.Trials[0], want)
		}
		if i == 1 && res.Trials[0].Tokens != tokens {
			t.Errorf("the cached sample gives %d tokens, the extracted one %d", res.Trials[0].Tokens, tokens)
		}
		tokens = res.Trials[0].Tokens
	}
}

// A screening trial (Sampled, issue 55 item 19) is estimated for the documents the plan's
// Sample keeps, the judged ones and its fraction of the others, not the whole corpus: its
// estimate is the whole-corpus one scaled by the kept bytes (same documents read, same
// ratio), and the result says what the Sample keeps.
func TestEstimateOfASampledTrialScalesToItsSample(t *testing.T) {
	model := testenv.Need(t, "RAGOPS_MODEL_DIR", "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints")
	dir := sciFactFolder(t, 200)
	f, err := os.Open(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() && len(ids) < 5 {
		var rec struct {
			ID string `json:"_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	dataset := t.TempDir()
	qrels, queries := "query-id\tcorpus-id\tscore\n", ""
	for i, id := range ids {
		qrels += fmt.Sprintf("q%d\t%s\t1\n", i, id)
		queries += fmt.Sprintf(`{"_id":"q%d","text":"query %d"}`+"\n", i, i)
	}
	corpusJSONL, err := os.ReadFile(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dataset, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataset, "qrels", "test.tsv"), []byte(qrels), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"queries.jsonl": []byte(queries), "corpus.jsonl": corpusJSONL} {
		if err := os.WriteFile(filepath.Join(dataset, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	strategy := ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 128}
	p := plan.Estimate{Version: plan.Version, Source: plan.Source{Dir: dir, Format: ragopsv1alpha1.FormatBEIR, Include: []string{"corpus.jsonl"}},
		Seed: 1, Fraction: 0.1, MinDocuments: 8, Sample: &plan.Sample{Fraction: 0.2, Seed: 3, Judged: &plan.Source{Dir: dataset}, Split: "test"},
		Trials: []plan.EstimateTrial{{Name: "full", Revision: "r1", ModelDir: model, Strategy: strategy}, {Name: "screen", Revision: "r2", ModelDir: model, Strategy: strategy, Sampled: true}}}
	res, err := estimate.Run(context.Background(), quiet, p, estimate.Options{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	full, screen := res.Trials[0], res.Trials[1]
	if res.SampledDocuments < 5 || res.SampledDocuments >= res.Documents/2 || res.SampledBytes <= 0 || res.SampledBytes >= res.Bytes {
		t.Fatalf("the sample keeps %d of %d documents (%d of %d bytes), want the 5 judged and about a fifth of the rest",
			res.SampledDocuments, res.Documents, res.SampledBytes, res.Bytes)
	}
	want := float64(full.Tokens) * float64(res.SampledBytes) / float64(res.Bytes)
	if full.Error != "" || screen.Error != "" || math.Abs(float64(screen.Tokens)-want) > 1 {
		t.Fatalf("screening trial %d tokens, want %.0f (the whole corpus's %d x %d/%d bytes)", screen.Tokens, want, full.Tokens, res.SampledBytes, res.Bytes)
	}
	t.Logf("sample %d of %d documents: %d of %d tokens", res.SampledDocuments, res.Documents, screen.Tokens, full.Tokens)
}

// An estimate of an S3 Corpus lists the bucket and downloads only its sample (GET-object
// requests counted at an S3-protocol server, gofakes3), and gives the figures an estimate of
// the same files in a folder gives.
func TestEstimateOfAnS3CorpusDownloadsOnlyItsSample(t *testing.T) {
	model := testenv.Need(t, "RAGOPS_MODEL_DIR", "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints")
	t.Setenv(plan.EnvS3AccessKey, "estimate-test")
	t.Setenv(plan.EnvS3SecretKey, "estimate-test-secret")
	backend := s3mem.New()
	if err := backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 40 {
		body := fmt.Sprintf("# Besluit %d\n\nDe raad besluit over voorstel %d en de begroting van %d.\n", i, i, 2000+i)
		key := fmt.Sprintf("d%02d.md", i)
		if _, err := backend.PutObject("docs", "archief/"+key, map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)},
			strings.NewReader(body), int64(len(body)), nil); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, key), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var gets []string
	s3 := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			mu.Lock()
			gets = append(gets, r.URL.Path)
			mu.Unlock()
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	trials := []plan.EstimateTrial{{Name: "fixed-32", Revision: "r1", ModelDir: model,
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 32}}}
	p := plan.Estimate{Version: plan.Version, Seed: 5, Fraction: 0.1, MinDocuments: 8, Trials: trials,
		Source: plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "docs", Prefix: "archief/", Insecure: true, Region: "us-east-1"}}}
	res, err := estimate.Run(context.Background(), quiet, p, estimate.Options{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != 40 || res.SampleDocuments != 8 || len(res.Trials) != 1 || res.Trials[0].Error != "" {
		t.Fatalf("estimate %+v, want 40 documents, a sample of 8 and one trial", res)
	}
	if len(gets) != res.SampleDocuments {
		t.Errorf("downloaded %d objects %v, want only the %d sampled", len(gets), gets, res.SampleDocuments)
	}
	p.Source = plan.Source{Dir: dir}
	local, err := estimate.Run(context.Background(), quiet, p, estimate.Options{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if local.Bytes != res.Bytes || local.Trials[0].Tokens != res.Trials[0].Tokens || local.Trials[0].Chunks != res.Trials[0].Chunks {
		t.Errorf("S3 estimate %+v %+v, the same files in a folder %+v %+v", res, res.Trials[0], local, local.Trials[0])
	}
}
