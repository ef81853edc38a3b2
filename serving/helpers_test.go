package serving

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/evaluator/beir"
)

const (
	prepModel = "run hack/prepare.d/embedder.sh (RAGOPS_ONNXRUNTIME_LIB, RAGOPS_MODEL_DIR)"
	prepE5    = "run hack/prepare.d/models.sh and set RAGOPS_E5_SMALL_DIR to the e5-small-v2 folder it prints"
)

// need returns $env, skipping the test when it is unset (failing under RAGOPS_REQUIRE_ALL=1).
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

// miniLM returns the all-MiniLM-L6-v2 folder; e5 the e5-small-v2 folder.
func miniLM(t testing.TB) string {
	need(t, ort.EnvLibrary, prepModel)
	return need(t, "RAGOPS_MODEL_DIR", prepModel)
}

func e5(t testing.TB) string {
	need(t, ort.EnvLibrary, prepModel)
	return need(t, "RAGOPS_E5_SMALL_DIR", prepE5)
}

// loadModel loads dir with one ONNX Runtime thread (the machine's cores are shared).
func loadModel(t testing.TB, dir string) *embedder.Model {
	t.Helper()
	m, err := embedder.Load(dir, embedder.Options{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// testServer is a warmed-up Server behind an httptest server on loopback.
type testServer struct {
	*Server
	URL   string
	model *embedder.Model
}

// startServer loads dir and serves it with opts until the test ends.
func startServer(t testing.TB, dir string, opts Options) *testServer {
	t.Helper()
	m := loadModel(t, dir)
	if opts.ModelHash == "" {
		h, err := embedder.FolderHash(dir)
		if err != nil {
			t.Fatal(err)
		}
		opts.ModelHash = h
	}
	s, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Warmup(t.Context()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return &testServer{Server: s, URL: hs.URL, model: m}
}

// post sends body as JSON to url and returns the status and the response body.
func post(t testing.TB, url string, body any) (int, []byte) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// weaviateBody is a /vectors body exactly as Weaviate v1.37.6 marshals its vecRequest.
func weaviateBody(text, task string) string {
	raw, _ := json.Marshal(map[string]any{"text": text, "dims": 0, "vector": nil, "error": "",
		"config": map[string]any{"pooling_strategy": "masked_mean", "task_type": task}})
	return string(raw)
}

// vectors posts text with task to /vectors and returns the vector; any status but 200 fails.
func vectors(t testing.TB, url, text, task string) []float32 {
	t.Helper()
	code, body := post(t, url+"/vectors", weaviateBody(text, task))
	if code != http.StatusOK {
		t.Fatalf("POST /vectors %q: %d %s", text, code, body)
	}
	var r VectorsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Text != text || r.Dims != len(r.Vector) {
		t.Fatalf("response text %q dims %d for %q with %d values", r.Text, r.Dims, text, len(r.Vector))
	}
	return r.Vector
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.NaN()
	}
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// scifact returns the SciFact test split from $RAGOPS_DATASETS (else ../../shared/datasets).
var scifactOnce struct {
	sync.Once
	ds  *beir.Dataset
	err error
}

func scifact(t testing.TB) *beir.Dataset {
	t.Helper()
	scifactOnce.Do(func() {
		base := os.Getenv("RAGOPS_DATASETS")
		if base == "" {
			wd, _ := os.Getwd()
			base = filepath.Join(wd, "..", "..", "shared", "datasets")
		}
		scifactOnce.ds, scifactOnce.err = beir.Load(os.DirFS(filepath.Join(base, "scifact")), beir.Options{Split: "test", SkipSpans: true})
	})
	if scifactOnce.err != nil {
		t.Fatalf("%v (set RAGOPS_DATASETS to the datasets folder)", scifactOnce.err)
	}
	return scifactOnce.ds
}

// metric returns the metric family name of reg's current values.
func metric(t testing.TB, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("metric %s not found", name)
	return nil
}

// counter returns the value of the counter name whose labels include want.
func counter(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	for _, m := range metric(t, reg, name).GetMetric() {
		ok := true
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s%v not found", name, want)
	return 0
}
