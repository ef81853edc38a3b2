package serving_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	readerbeir "github.com/ragops/ragops/reader/beir"
	"github.com/ragops/ragops/serving"
)

// The /vectors vector of a text equals the embedder's own vector for it (the Evaluation Job's
// EmbedQueries for task_type query, EmbedTexts for passage), for a model without prefixes
// (MiniLM: query and passage vectors equal) and one with them (e5: "query: " / "passage: ",
// so the two differ).
func TestVectorsEqualTheEmbedder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dir      func(testing.TB) string
		prefixed bool
	}{{"all-MiniLM-L6-v2", miniLM, false}, {"e5-small-v2", e5, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			srv := startServer(t, dir, serving.Options{})
			ref := loadModel(t, dir) // a second instance, as a Job would load it
			ds := scifact(t)
			var queries, docs []string
			for _, q := range ds.Queries[:20] {
				queries = append(queries, q.Text)
			}
			for _, d := range ds.Corpus[:10] {
				doc, _ := readerbeir.FromFields(d.Title, d.Text)
				docs = append(docs, doc.Text)
			}
			wantQ, err := ref.EmbedQueries(t.Context(), queries)
			if err != nil {
				t.Fatal(err)
			}
			wantD, err := ref.EmbedTexts(t.Context(), docs)
			if err != nil {
				t.Fatal(err)
			}
			minSame, maxCross := 1.0, -1.0
			for i, q := range queries {
				got := vectors(t, srv.URL, q, "query")
				minSame = min(minSame, cosine(got, wantQ[i]))
				asPassage := vectors(t, srv.URL, q, "passage")
				maxCross = max(maxCross, cosine(got, asPassage))
			}
			for i, d := range docs {
				minSame = min(minSame, cosine(vectors(t, srv.URL, d, "passage"), wantD[i]))
				minSame = min(minSame, cosine(vectors(t, srv.URL, d, ""), wantD[i]))
			}
			t.Logf("min cosine to the embedder %.9f; max cosine query vs passage of one query %.6f", minSame, maxCross)
			if minSame < 1-1e-6 {
				t.Errorf("a served vector differs from the embedder's: min cosine %.9f", minSame)
			}
			if tc.prefixed && maxCross > 0.9999 {
				t.Errorf("query and passage vectors of one text agree to %.6f: the prefixes were not applied", maxCross)
			}
			if !tc.prefixed && maxCross < 1-1e-6 {
				t.Errorf("without prefixes query and passage vectors should be equal, cosine %.9f", maxCross)
			}
			if got := counter(t, srv.Registry(), "ragops_serve_texts_total", map[string]string{"task": "query"}); got != float64(len(queries)) {
				t.Errorf("texts_total{task=query} = %v, want %d", got, len(queries))
			}
		})
	}
}

// /meta names the folder's model, hash and dimensions; readiness follows warm-up.
func TestMetaAndReadiness(t *testing.T) {
	dir := miniLM(t)
	m := loadModel(t, dir)
	s, err := serving.New(m, serving.Options{ModelHash: "sha256:test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/.well-known/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("ready before warm-up: %d, want 503", code)
	}
	if code, _ := get("/.well-known/live"); code != http.StatusNoContent {
		t.Errorf("live: %d, want 204", code)
	}
	if err := s.Warmup(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/.well-known/ready"); code != http.StatusNoContent {
		t.Errorf("ready after warm-up: %d, want 204", code)
	}
	code, body := get("/meta")
	var meta serving.Meta
	if err := json.Unmarshal([]byte(body), &meta); code != http.StatusOK || err != nil {
		t.Fatalf("meta: %d %s %v", code, body, err)
	}
	c := m.Config()
	if meta.Model != c.Name || meta.ModelHash != "sha256:test" || meta.Dimensions != c.Dimension || meta.Pooling != c.Pooling {
		t.Errorf("meta %+v does not describe %+v", meta, c)
	}
	s.Drain()
	if code, _ := get("/.well-known/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("ready while draining: %d, want 503", code)
	}
}

// POST /v1/embeddings answers in OpenAI's shape: float and base64 encodings both carry the
// embedder's query vectors (input_type passage the document ones), usage counts the tokens,
// another model name is 404.
func TestOpenAIEmbeddings(t *testing.T) {
	dir := e5(t)
	srv := startServer(t, dir, serving.Options{})
	ref := loadModel(t, dir)
	texts := []string{"what causes scurvy", "Vitamin C deficiency leads to scurvy."}
	wantQ, _ := ref.EmbedQueries(t.Context(), texts)
	wantD, _ := ref.EmbedTexts(t.Context(), texts)
	name := srv.Model.Config().Name
	tok := ref.Tokenizer()
	wantTokens := 0
	for _, tx := range texts {
		wantTokens += len(tok.Encode(ref.Config().QueryPrefix+tx, true).IDs)
	}

	for _, tc := range []struct {
		body map[string]any
		want [][]float32
	}{
		{map[string]any{"input": texts, "model": name}, wantQ},
		{map[string]any{"input": texts, "model": name, "encoding_format": "base64"}, wantQ},
		{map[string]any{"input": texts, "model": name, "input_type": "passage"}, wantD},
		{map[string]any{"input": texts[0]}, wantQ[:1]},
	} {
		code, body := post(t, srv.URL+"/v1/embeddings", tc.body)
		if code != http.StatusOK {
			t.Fatalf("%v: %d %s", tc.body, code, body)
		}
		var r struct {
			Object string `json:"object"`
			Model  string `json:"model"`
			Data   []struct {
				Object    string          `json:"object"`
				Index     int             `json:"index"`
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
			Usage serving.Usage `json:"usage"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Object != "list" || r.Model != name || len(r.Data) != len(tc.want) {
			t.Fatalf("%v: response %s", tc.body, body)
		}
		for i, d := range r.Data {
			var v []float32
			if tc.body["encoding_format"] == "base64" {
				var s string
				json.Unmarshal(d.Embedding, &s)
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; k+4 <= len(raw); k += 4 {
					v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[k:])))
				}
			} else {
				json.Unmarshal(d.Embedding, &v)
			}
			if d.Object != "embedding" || d.Index != i || cosine(v, tc.want[i]) < 1-1e-6 {
				t.Errorf("%v: data[%d] = %s %d, cosine %.9f", tc.body, i, d.Object, d.Index, cosine(v, tc.want[i]))
			}
		}
		if tc.body["input_type"] == nil && len(tc.want) == 2 && r.Usage.PromptTokens != wantTokens {
			t.Errorf("usage %+v, want %d prompt tokens", r.Usage, wantTokens)
		}
	}
	code, body := post(t, srv.URL+"/v1/embeddings", map[string]any{"input": "x", "model": "text-embedding-3-small"})
	if code != http.StatusNotFound || !strings.Contains(string(body), name) {
		t.Errorf("another model: %d %s, want 404 naming %s", code, body, name)
	}
}

// Oversize bodies get 413 naming the limit; malformed JSON, empty texts, unknown tasks and a
// collection configured for another pooling or width get 400, in Weaviate's error shape.
func TestBadInput(t *testing.T) {
	srv := startServer(t, miniLM(t), serving.Options{MaxRequestBytes: 4096, QueueSize: 8, MaxInputs: 4})
	big := weaviateBody(strings.Repeat("word ", 2000), "query")
	for _, tc := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/vectors", big, http.StatusRequestEntityTooLarge, "4096 bytes"},
		{"/vectors", `{"text": "unterminated`, http.StatusBadRequest, "malformed JSON"},
		{"/vectors", `[1, 2]`, http.StatusBadRequest, "malformed JSON"},
		{"/vectors", weaviateBody("", "query"), http.StatusBadRequest, "text is empty"},
		{"/vectors", weaviateBody("  \n", "passage"), http.StatusBadRequest, "text is empty"},
		{"/vectors", weaviateBody("ok", "summary"), http.StatusBadRequest, "want query, passage or document"},
		{"/vectors", `{"text": "ok", "config": {"pooling_strategy": "cls", "task_type": "query"}}`, http.StatusBadRequest, "poolingStrategy to masked_mean"},
		{"/vectors", `{"text": "ok", "config": {"task_type": "query", "dimensions": 256}}`, http.StatusBadRequest, "384 dimensions"},
		{"/v1/embeddings", `{"input": ["a", "b", "c", "d", "e"]}`, http.StatusRequestEntityTooLarge, "limit of 4"},
		{"/v1/embeddings", `{"input": []}`, http.StatusBadRequest, "empty list"},
		{"/v1/embeddings", `{"input": [[101, 2054]]}`, http.StatusBadRequest, "token arrays"},
		{"/v1/embeddings", `{"input": ["a", ""]}`, http.StatusBadRequest, "input[1] is empty"},
		{"/v1/embeddings", `{"model": "x"`, http.StatusBadRequest, "malformed JSON"},
	} {
		code, body := post(t, srv.URL+tc.path, tc.body)
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || len(e.Error) == 0 {
			t.Errorf("%s %.40s: body %s is not a JSON error", tc.path, tc.body, body)
		}
		if code != tc.code || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s %.40s: %d %s, want %d with %q", tc.path, tc.body, code, body, tc.code, tc.msg)
		}
	}
	if got := counter(t, srv.Registry(), "ragops_serve_rejected_total", map[string]string{"reason": "too_large"}); got != 2 {
		t.Errorf("rejected_total{too_large} = %v, want 2", got)
	}
	if got := counter(t, srv.Registry(), "ragops_serve_rejected_total", map[string]string{"reason": "bad_request"}); got != 11 {
		t.Errorf("rejected_total{bad_request} = %v, want 11", got)
	}
	vectors(t, srv.URL, "still serving", "query")
}

// Concurrent requests are embedded together: 32 clients at once give fewer than 32 batches,
// and every client gets its own text's vector.
func TestConcurrentRequestsAreBatched(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{BatchWindow: 20 * time.Millisecond})
	ref := loadModel(t, dir)
	ds := scifact(t)
	const n = 32
	texts := make([]string, n)
	for i := range texts {
		texts[i] = ds.Queries[i].Text
	}
	want, _ := ref.EmbedQueries(t.Context(), texts)
	got := make([][]float32, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i] = vectors(t, srv.URL, texts[i], "query") })
	}
	wg.Wait()
	for i := range n {
		if c := cosine(got[i], want[i]); c < 1-1e-6 {
			t.Errorf("client %d got another text's vector (cosine %.6f)", i, c)
		}
	}
	h := metric(t, srv.Registry(), "ragops_serve_batch_size").GetMetric()[0].GetHistogram()
	batches, sum := h.GetSampleCount(), h.GetSampleSum()
	// Warm-up runs outside the batcher, so every sample is a client batch.
	t.Logf("%d texts in %d batches (mean %.1f)", int(sum), batches, sum/float64(batches))
	if sum != n || batches >= n || h.GetBucket()[0].GetCumulativeCount() == batches {
		t.Errorf("batch_size: %d batches for %v texts, %d of size 1: no batching", batches, sum, h.GetBucket()[0].GetCumulativeCount())
	}
}

// 64 concurrent clients over a queue of 4 texts: the ones that do not fit get 429 with
// Retry-After, every accepted one gets its vector, the rejected count matches the metric, and
// the server keeps serving with bounded memory.
func TestQueueBoundRejectsAndSurvives(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{QueueSize: 4, MaxBatchTexts: 2, BatchWindow: time.Millisecond})
	ref := loadModel(t, dir)
	ds := scifact(t)
	rss := func() float64 {
		return metric(t, srv.Registry(), "process_resident_memory_bytes").GetMetric()[0].GetGauge().GetValue()
	}
	before := rss()
	const clients = 64
	texts := make([]string, clients)
	for i := range texts {
		texts[i] = ds.Queries[i].Text
	}
	want, _ := ref.EmbedQueries(t.Context(), texts)
	codes := make([]int, clients)
	retry := make([]string, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Go(func() {
			<-start
			resp, err := http.Post(srv.URL+"/vectors", "application/json", strings.NewReader(weaviateBody(texts[i], "query")))
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			codes[i], retry[i] = resp.StatusCode, resp.Header.Get("Retry-After")
			if resp.StatusCode == http.StatusOK {
				var r serving.VectorsResponse
				if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || cosine(r.Vector, want[i]) < 1-1e-6 {
					t.Errorf("client %d: accepted but wrong vector (%v)", i, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	ok, rejected := 0, 0
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			rejected++
			if retry[i] == "" {
				t.Errorf("client %d: 429 without Retry-After", i)
			}
		default:
			t.Errorf("client %d: status %d", i, c)
		}
	}
	after := rss()
	t.Logf("%d accepted, %d rejected with 429; RSS %.1f MiB before, %.1f MiB after", ok, rejected, before/(1<<20), after/(1<<20))
	if ok == 0 || rejected == 0 || ok+rejected != clients {
		t.Errorf("accepted %d, rejected %d of %d: want both, summing to %d", ok, rejected, clients, clients)
	}
	if got := counter(t, srv.Registry(), "ragops_serve_rejected_total", map[string]string{"reason": "queue_full"}); got != float64(rejected) {
		t.Errorf("rejected_total{queue_full} = %v, want %d", got, rejected)
	}
	if d := metric(t, srv.Registry(), "ragops_serve_queue_depth").GetMetric()[0].GetGauge().GetValue(); d != 0 {
		t.Errorf("queue depth %v after all requests finished, want 0", d)
	}
	if after-before > 64<<20 {
		t.Errorf("RSS grew by %.1f MiB under 64 clients", (after-before)/(1<<20))
	}
	vectors(t, srv.URL, "the server survived", "query")
}

// serving.Run drains on cancellation (SIGTERM in ragops serve): readiness turns 503 at once while
// requests are still served for the drain delay, every in-flight request completes with its
// vector, then the listener closes and serving.Run returns nil.
func TestRunDrainsOnShutdown(t *testing.T) {
	dir := miniLM(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		ran <- serving.Run(ctx, ln, serving.Config{ModelDir: dir, DrainDelay: 500 * time.Millisecond,
			Options: serving.Options{MaxBatchTexts: 1, BatchWindow: time.Millisecond}}, slog.New(slog.DiscardHandler))
	}()
	waitStatus(t, url+"/.well-known/ready", http.StatusNoContent, 2*time.Minute)

	// 12 documents of about 500 tokens, one per batch: a few seconds of work in flight.
	ds := scifact(t)
	const n = 12
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			text := ds.Corpus[i].Text + " " + ds.Corpus[i+n].Text
			code, body := post(t, url+"/vectors", weaviateBody(text, "passage"))
			codes[i] = code
			if code != http.StatusOK {
				t.Errorf("in-flight request %d: %d %s", i, code, body)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	time.Sleep(100 * time.Millisecond)
	if code := status(url + "/.well-known/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("ready while draining: %d, want 503", code)
	}
	if code, body := post(t, url+"/vectors", weaviateBody("during the drain delay", "query")); code != http.StatusOK {
		t.Errorf("request during the drain delay: %d %s", code, body)
	}
	wg.Wait()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after the drain")
	}
	if _, err := http.Get(url + "/.well-known/live"); err == nil {
		t.Error("the listener still accepts connections after serving.Run returned")
	}
	t.Logf("in-flight statuses %v", codes)
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitStatus(t *testing.T, url string, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for status(url) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %d within %s", url, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
