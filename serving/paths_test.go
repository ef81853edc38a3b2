package serving_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/specs"
)

// vectorsAt posts a Weaviate body with task (empty: no task_type) to url and returns the
// status and the vector.
func vectorsAt(t testing.TB, url, text, task string) (int, []float32) {
	t.Helper()
	code, body := post(t, url, weaviateBody(text, task))
	if code != http.StatusOK {
		return code, nil
	}
	var r serving.VectorsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return code, r.Vector
}

// TestWeaviatePathsFixTheTask (issue 55 item 16): the query and passage paths collections are
// wired to embed as their path says whatever the request's task_type: a request without one
// posted to the query path is a query (e5's "query: " prefix), never a passage; a conflicting
// task_type is refused with 400.
func TestWeaviatePathsFixTheTask(t *testing.T) {
	dir := e5(t)
	srv := startServer(t, dir, serving.Options{})
	ref := loadModel(t, dir)
	const text = "what lowers blood pressure in adults"
	wantQ, err := ref.EmbedQueries(t.Context(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	wantD, err := ref.EmbedTexts(t.Context(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(wantQ[0], wantD[0]); c > 0.9999 {
		t.Fatalf("query and passage vectors agree to %.6f: the test cannot tell them apart", c)
	}
	for _, tc := range []struct {
		url, task string
		want      []float32
	}{
		{specs.QueryURL(srv.URL) + "/vectors", "", wantQ[0]},
		{specs.QueryURL(srv.URL) + "/vectors", "query", wantQ[0]},
		{specs.PassageURL(srv.URL) + "/vectors", "", wantD[0]},
		{specs.PassageURL(srv.URL) + "/vectors", "passage", wantD[0]},
	} {
		code, got := vectorsAt(t, tc.url, text, tc.task)
		if code != http.StatusOK {
			t.Errorf("%s task_type %q: %d", tc.url, tc.task, code)
			continue
		}
		if c := cosine(got, tc.want); c < 1-1e-6 {
			t.Errorf("%s task_type %q: cosine %.6f to the expected task's vector", tc.url, tc.task, c)
		}
	}
	for _, tc := range []struct{ url, task string }{
		{specs.QueryURL(srv.URL) + "/vectors", "passage"},
		{specs.PassageURL(srv.URL) + "/vectors", "query"},
	} {
		if code, _ := vectorsAt(t, tc.url, text, tc.task); code != http.StatusBadRequest {
			t.Errorf("%s with task_type %q: %d, want 400", tc.url, tc.task, code)
		}
	}
}

// TestWeaviateReserveUnderAppLoad (issue 55 item 17): apps flooding /vectors and
// /v1/embeddings fill the queue up to its share for apps and get 429, while a Weaviate
// client on the query path (at most the reserve in flight) is never refused.
func TestWeaviateReserveUnderAppLoad(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{QueueSize: 8, WeaviateReserve: 2, MaxBatchTexts: 2, BatchWindow: time.Millisecond})
	ds := scifact(t)
	var stop atomic.Bool
	var appOK, appRejected atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				text := ds.Queries[(i*7+n)%len(ds.Queries)].Text
				var code int
				if i%2 == 0 {
					code, _ = post(t, srv.URL+"/vectors", weaviateBody(text, "query"))
				} else {
					code, _ = post(t, srv.URL+"/v1/embeddings", map[string]any{"input": []string{text, text}})
				}
				switch code {
				case http.StatusOK:
					appOK.Add(1)
				case http.StatusTooManyRequests:
					appRejected.Add(1)
					time.Sleep(2 * time.Millisecond) // Retry-After, shortened
				default:
					t.Errorf("app request: status %d", code)
					return
				}
			}
		})
	}
	// Weaviate: two nearText queries at a time, the reserve's size, once the apps have
	// filled their share of the queue.
	for deadline := time.Now().Add(time.Minute); appRejected.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatal("the apps never filled their share of the queue: the test proves nothing")
		}
	}
	var refused atomic.Int64
	var wwg sync.WaitGroup
	for w := range 2 {
		wwg.Go(func() {
			for k := range 15 {
				code, body := post(t, specs.QueryURL(srv.URL)+"/vectors", weaviateBody(ds.Queries[100+w*15+k].Text, "query"))
				if code != http.StatusOK {
					refused.Add(1)
					t.Errorf("Weaviate query %d: %d %s", w*15+k, code, body)
				}
			}
		})
	}
	wwg.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("apps: %d served, %d refused with 429; Weaviate: %d of 30 refused", appOK.Load(), appRejected.Load(), refused.Load())
}

// TestRunTimesOutSilentClients (issue 55 item 17): serving.Run's listener closes a
// connection whose request body never arrives (ReadTimeout) and an idle keep-alive
// connection (IdleTimeout), so clients that connect and send nothing cannot pile up.
func TestRunTimesOutSilentClients(t *testing.T) {
	dir := miniLM(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() {
		ran <- serving.Run(ctx, ln, serving.Config{ModelDir: dir, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond},
			slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-ran })
	waitStatus(t, "http://"+addr+"/.well-known/ready", http.StatusNoContent, 2*time.Minute)

	// closed reports whether the server ends conn (EOF, a reset, or an answer such as 408
	// followed by EOF) before a generous deadline.
	closed := func(conn net.Conn) bool {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.Copy(io.Discard, conn)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	// A body announced and never sent.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "POST /vectors HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"te"); err != nil {
		t.Fatal(err)
	}
	if !closed(slow) {
		t.Error("a request whose body never arrives holds its connection past 30 s")
	}
	// An idle keep-alive connection after one request.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /.well-known/live HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("live: %v %v", resp, err)
	}
	if !closed(idle) {
		t.Error("an idle keep-alive connection is held past 30 s")
	}
}
