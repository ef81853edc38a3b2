package serving_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
)

func miniLM(t testing.TB) string { return servingtest.ModelDir(t, servingtest.EnvMiniLM) }
func e5(t testing.TB) string     { return servingtest.ModelDir(t, servingtest.EnvE5) }

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

func startServer(t testing.TB, dir string, opts serving.Options) *servingtest.Server {
	t.Helper()
	return servingtest.Start(t, dir, opts)
}

var scifactOnce struct {
	sync.Once
	ds *beir.Dataset
}

func scifact(t testing.TB) *beir.Dataset {
	t.Helper()
	scifactOnce.Do(func() { scifactOnce.ds = servingtest.SciFact(t) })
	if scifactOnce.ds == nil {
		t.Fatal("SciFact did not load")
	}
	return scifactOnce.ds
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
	var r serving.VectorsResponse
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
