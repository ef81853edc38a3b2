package serving_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/specs"
)

// holdFirst makes srv report every batch on batches as it starts and hold its worker in the
// first batch, as a long batch would, until release is called (at the latest when the test
// ends).
func holdFirst(t *testing.T, srv *serving.Server) (batches <-chan []serving.BatchJob, release func()) {
	t.Helper()
	ch := make(chan []serving.BatchJob, 256)
	hold := make(chan struct{})
	var first atomic.Bool
	serving.OnBatch(srv, func(jobs []serving.BatchJob) {
		ch <- jobs
		if first.CompareAndSwap(false, true) {
			<-hold
		}
	})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return ch, release
}

type embedResult struct {
	vecs [][]float32
	err  error
}

// embedAsync runs srv.Embed on its own goroutine and delivers the result.
func embedAsync(ctx context.Context, srv *serving.Server, task serving.Task, texts []string) <-chan embedResult {
	ch := make(chan embedResult, 1)
	go func() {
		vecs, _, err := srv.Embed(ctx, task, texts)
		ch <- embedResult{vecs, err}
	}()
	return ch
}

// waitQueued waits until the queue_depth gauge reads want texts.
func waitQueued(t *testing.T, srv *serving.Server, want float64) {
	t.Helper()
	for range 12000 { // a generous bound (2 minutes), never reached when the server works
		if metric(t, srv.Registry(), "ragops_serve_queue_depth").GetMetric()[0].GetGauge().GetValue() == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("queue depth never reached %v", want)
}

// sciQueries returns the first n SciFact test queries.
func sciQueries(t *testing.T, n int) []string {
	t.Helper()
	var qs []string
	for _, q := range scifact(t).Queries[:n] {
		qs = append(qs, q.Text)
	}
	return qs
}

// checkVectors fails unless r carries want's vectors (cosine 1 to 1e-6).
func checkVectors(t *testing.T, name string, r embedResult, want [][]float32) {
	t.Helper()
	if r.err != nil || len(r.vecs) != len(want) {
		t.Errorf("%s: %d vectors, %v; want %d", name, len(r.vecs), r.err, len(want))
		return
	}
	for i := range want {
		if c := cosine(r.vecs[i], want[i]); c < 1-1e-6 {
			t.Errorf("%s: vector %d has cosine %.9f to the embedder's", name, i, c)
		}
	}
}

// TestQueuedDuringABatchRunsNextWithoutATimer (issue 56): requests that arrive while a batch
// runs make up the next batch, which starts as soon as the model is free. With a batch window
// of an hour, two queries queued behind a running batch of three come back together in the
// second batch, long before any window could end (2e376b2 held that batch for the window,
// since the batch before it had more than one text).
func TestQueuedDuringABatchRunsNextWithoutATimer(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{BatchWindow: time.Hour})
	ref := loadModel(t, dir)
	batches, release := holdFirst(t, srv.Server)
	qs := sciQueries(t, 5)
	want, err := ref.EmbedQueries(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	a := embedAsync(t.Context(), srv.Server, serving.TaskQuery, qs[:3])
	if got := <-batches; len(got) != 1 || got[0].Texts != 3 {
		t.Fatalf("first batch %+v, want one job of 3 texts", got)
	}
	// The model is busy with the first batch now. A minute is a sixtieth of the window.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	b1 := embedAsync(ctx, srv.Server, serving.TaskQuery, qs[3:4])
	waitQueued(t, srv.Server, 1)
	b2 := embedAsync(ctx, srv.Server, serving.TaskQuery, qs[4:5])
	waitQueued(t, srv.Server, 2)
	release()
	checkVectors(t, "first batch", <-a, want[:3])
	checkVectors(t, "queued query 1", <-b1, want[3:4])
	checkVectors(t, "queued query 2", <-b2, want[4:5])
	select {
	case got := <-batches:
		if len(got) != 2 || got[0].Texts != 1 || got[1].Texts != 1 {
			t.Errorf("second batch %+v, want both queued queries", got)
		}
	default:
		t.Error("the queued queries did not run as a batch")
	}
	if !t.Failed() {
		waitQueued(t, srv.Server, 0)
	}
}

// TestBatchesTakeTheQueueUpToTheLimits (issue 56): batches are formed from what waits, in
// queue order, each as large as the limits let it be: no batch of several jobs exceeds
// MaxBatchTexts or MaxBatchTokens, a job that does not fit opens the next batch, a single job
// over the limits runs alone, and every text is embedded once with its own vector.
func TestBatchesTakeTheQueueUpToTheLimits(t *testing.T) {
	const maxTexts, maxTokens = 4, 96
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{MaxBatchTexts: maxTexts, MaxBatchTokens: maxTokens, QueueSize: 64})
	ref := loadModel(t, dir)
	batches, release := holdFirst(t, srv.Server)
	qs := sciQueries(t, 21)
	want, err := ref.EmbedQueries(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	// Jobs in queue order: their texts are consecutive queries. The 6-text job is over
	// MaxBatchTexts on its own.
	sizes := []int{1, 1, 1, 1, 1, 3, 1, 1, 6, 2, 1, 1, 1}
	var results []<-chan embedResult
	var got [][]serving.BatchJob
	next, queued := 0, 0
	for i, n := range sizes {
		results = append(results, embedAsync(t.Context(), srv.Server, serving.TaskQuery, qs[next:next+n]))
		next += n
		if i == 0 {
			got = append(got, <-batches) // the model now holds the first job
			continue
		}
		queued += n
		waitQueued(t, srv.Server, float64(queued))
	}
	release()
	next = 0
	for i, r := range results {
		checkVectors(t, "job", <-r, want[next:next+sizes[i]])
		next += sizes[i]
	}
	for len(batches) > 0 {
		got = append(got, <-batches)
	}
	var order []int
	for k, b := range got {
		texts, tokens := 0, 0
		for _, j := range b {
			texts += j.Texts
			tokens += j.Tokens
			order = append(order, j.Texts)
		}
		if len(b) > 1 && (texts > maxTexts || tokens > maxTokens) {
			t.Errorf("batch %d %+v holds %d texts, %d tokens: over the limits %d, %d", k, b, texts, tokens, maxTexts, maxTokens)
		}
		if k+1 < len(got) && k > 0 { // the first batch was the only job queued then
			n := got[k+1][0]
			if texts+n.Texts <= maxTexts && tokens+n.Tokens <= maxTokens {
				t.Errorf("batch %d %+v left out the next queued job %+v, which fitted", k, b, n)
			}
		}
	}
	t.Logf("batches %v", got)
	if len(order) != len(sizes) {
		t.Fatalf("jobs ran in the order %v, want %v", order, sizes)
	}
	for i := range sizes {
		if order[i] != sizes[i] {
			t.Fatalf("jobs ran in the order %v, want %v", order, sizes)
		}
	}
}

// TestCancelledQueuedRequestDoesNotBlockOthers (issue 56): a queued request whose caller
// leaves returns at once, while the model is still busy, and gives up its place; the request
// queued behind it gets its vector; the left one is not embedded.
func TestCancelledQueuedRequestDoesNotBlockOthers(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{})
	ref := loadModel(t, dir)
	batches, release := holdFirst(t, srv.Server)
	qs := sciQueries(t, 3)
	want, err := ref.EmbedQueries(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	a := embedAsync(t.Context(), srv.Server, serving.TaskQuery, qs[:1])
	<-batches
	ctx, cancel := context.WithCancel(t.Context())
	left := embedAsync(ctx, srv.Server, serving.TaskQuery, qs[1:2])
	waitQueued(t, srv.Server, 1)
	c := embedAsync(t.Context(), srv.Server, serving.TaskQuery, qs[2:3])
	waitQueued(t, srv.Server, 2)
	cancel()
	if r := <-left; !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled request: %d vectors, %v; want context.Canceled", len(r.vecs), r.err)
	}
	release()
	checkVectors(t, "first", <-a, want[:1])
	checkVectors(t, "behind the cancelled one", <-c, want[2:3])
	waitQueued(t, srv.Server, 0)
	if got := counter(t, srv.Registry(), "ragops_serve_texts_total", map[string]string{"task": "query"}); got != 2 {
		t.Errorf("texts_total{task=query} = %v, want 2: the cancelled text is not embedded", got)
	}
}

// TestQueueFullWhileTheModelIsBusy (issue 56): shedding is unchanged by the pipeline. While
// the model is busy, apps fill the queue up to QueueSize-WeaviateReserve and the next app
// request is answered 429 with Retry-After at once; Weaviate's query path still takes the
// reserved place and is refused only when the whole queue is full; every accepted request
// gets its vector afterwards.
func TestQueueFullWhileTheModelIsBusy(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{QueueSize: 4, WeaviateReserve: 1})
	ref := loadModel(t, dir)
	batches, release := holdFirst(t, srv.Server)
	qs := sciQueries(t, 7)
	want, err := ref.EmbedQueries(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	a := embedAsync(t.Context(), srv.Server, serving.TaskQuery, qs[:1])
	<-batches
	type answer struct {
		code  int
		retry string
		body  []byte
	}
	send := func(path, text string) answer {
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader([]byte(weaviateBody(text, "query"))))
		if err != nil {
			return answer{body: []byte(err.Error())}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header.Get("Retry-After"), body}
	}
	sendAsync := func(path, text string) <-chan answer {
		ch := make(chan answer, 1)
		go func() { ch <- send(path, text) }()
		return ch
	}
	var accepted []<-chan answer
	for i := 1; i <= 3; i++ {
		accepted = append(accepted, sendAsync("/vectors", qs[i]))
		waitQueued(t, srv.Server, float64(i))
	}
	if r := send("/vectors", qs[4]); r.code != http.StatusTooManyRequests || r.retry != "1" {
		t.Errorf("app request over QueueSize-WeaviateReserve: %d Retry-After %q %s, want 429 with Retry-After 1", r.code, r.retry, r.body)
	}
	accepted = append(accepted, sendAsync(specs.QueryPath+"/vectors", qs[5]))
	waitQueued(t, srv.Server, 4)
	if r := send(specs.QueryPath+"/vectors", qs[6]); r.code != http.StatusTooManyRequests || r.retry != "1" {
		t.Errorf("Weaviate request over QueueSize: %d Retry-After %q %s, want 429 with Retry-After 1", r.code, r.retry, r.body)
	}
	release()
	checkVectors(t, "first", <-a, want[:1])
	for i, ch := range accepted {
		r := <-ch
		var v serving.VectorsResponse
		if err := json.Unmarshal(r.body, &v); r.code != http.StatusOK || err != nil {
			t.Errorf("accepted request %d: %d %s", i, r.code, r.body)
			continue
		}
		checkVectors(t, "accepted", embedResult{vecs: [][]float32{v.Vector}}, want[[]int{1, 2, 3, 5}[i]:][:1])
	}
	if got := counter(t, srv.Registry(), "ragops_serve_rejected_total", map[string]string{"reason": "queue_full"}); got != 2 {
		t.Errorf("rejected_total{queue_full} = %v, want 2", got)
	}
	waitQueued(t, srv.Server, 0)
}

// TestSlowClientDoesNotHoldABatch (issue 56): a batch waits only for requests the server has
// received and is tokenizing, never for a client still sending its body. With a batch window
// of an hour, a query submitted while another request's body is half sent comes back; the
// slow request gets its vector once its body is complete.
func TestSlowClientDoesNotHoldABatch(t *testing.T) {
	dir := miniLM(t)
	srv := startServer(t, dir, serving.Options{BatchWindow: time.Hour})
	ref := loadModel(t, dir)
	qs := sciQueries(t, 2)
	want, err := ref.EmbedQueries(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(weaviateBody(qs[1], "query"))
	pr, pw := io.Pipe()
	req := httptest.NewRequest(http.MethodPost, "/vectors", pr)
	rec := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Handler().ServeHTTP(rec, req)
	}()
	// A pipe write returns once the handler has read it: the handler is reading the body.
	if _, err := pw.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a sixtieth of the window
	defer cancel()
	checkVectors(t, "query beside a slow client", <-embedAsync(ctx, srv.Server, serving.TaskQuery, qs[:1]), want[:1])
	pw.Write(body[len(body)/2:])
	pw.Close()
	<-served
	var v serving.VectorsResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("slow request: %d %s", rec.Code, rec.Body)
	}
	checkVectors(t, "slow request", embedResult{vecs: [][]float32{v.Vector}}, want[1:])
}
