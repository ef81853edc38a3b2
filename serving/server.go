package serving

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ragops/ragops/embedder"
)

// Options tunes batching, admission and limits. Zero fields take the defaults named.
type Options struct {
	// BatchWindow bounds how long a batch waits, after its first text was queued, for
	// requests that have been received and are being parsed and tokenized, when nothing else
	// is queued; default 3 ms. Nothing waits for requests that have not arrived: a free
	// worker runs what is queued at once, and what arrives meanwhile makes up the next batch.
	BatchWindow time.Duration
	// MaxBatchTexts caps the texts of one batch; default 64.
	MaxBatchTexts int
	// MaxBatchTokens caps the tokens of one batch ([CLS] prefix text [SEP] per text, cut to
	// the model's positions); default 8,192. A single request over it runs as its own batch
	// (the embedder splits it under embedder.Options.BatchTokens).
	MaxBatchTokens int
	// QueueSize is how many texts may wait for a batch; a request that does not fit is
	// answered 429. Default 256.
	QueueSize int
	// MaxRequestBytes caps a request body; larger bodies are answered 413. Default 1 MiB.
	MaxRequestBytes int64
	// WeaviateReserve is how many of the QueueSize places only Weaviate's paths
	// (specs.QueryPath and specs.PassagePath, the URLs ragops wires collections to) may take,
	// so that apps calling /vectors or /v1/embeddings cannot starve nearText queries; default
	// QueueSize/4. Apps get 429 once QueueSize-WeaviateReserve texts wait.
	WeaviateReserve int
	// MaxInputs caps the texts of one /v1/embeddings request (413 beyond); default and
	// upper bound QueueSize-WeaviateReserve.
	MaxInputs int
	// Workers is the number of batches run at once; default 1 (ONNX Runtime already uses
	// embedder.Options.IntraOpThreads threads per batch).
	Workers int
	// ModelHash is the model folder's hash (embedder.FolderHash) reported by /meta.
	ModelHash string
	// Precision is the precision the model runs in, reported by /meta; empty means fp32.
	Precision embedder.Precision
}

func (o *Options) defaults() error {
	if o.BatchWindow == 0 {
		o.BatchWindow = 3 * time.Millisecond
	}
	if o.MaxBatchTexts == 0 {
		o.MaxBatchTexts = 64
	}
	if o.MaxBatchTokens == 0 {
		o.MaxBatchTokens = 8192
	}
	if o.QueueSize == 0 {
		o.QueueSize = 256
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = 1 << 20
	}
	if o.WeaviateReserve == 0 {
		o.WeaviateReserve = o.QueueSize / 4
	}
	if o.MaxInputs == 0 {
		o.MaxInputs = o.QueueSize - o.WeaviateReserve
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.Precision == "" {
		o.Precision = embedder.FP32
	}
	switch {
	case o.BatchWindow < 0 || o.MaxBatchTexts < 1 || o.MaxBatchTokens < 1 || o.QueueSize < 1 || o.MaxRequestBytes < 1 || o.Workers < 1:
		return fmt.Errorf("serving: batch window %s, max batch texts %d, max batch tokens %d, queue size %d, max request bytes %d, workers %d: want >= 0 and > 0",
			o.BatchWindow, o.MaxBatchTexts, o.MaxBatchTokens, o.QueueSize, o.MaxRequestBytes, o.Workers)
	case o.WeaviateReserve < 0 || o.WeaviateReserve >= o.QueueSize:
		return fmt.Errorf("serving: Weaviate's reserve %d must be within [0, queue size %d)", o.WeaviateReserve, o.QueueSize)
	case o.MaxInputs < 1 || o.MaxInputs > o.QueueSize-o.WeaviateReserve:
		return fmt.Errorf("serving: max inputs %d must be within [1, queue size %d - Weaviate's reserve %d]", o.MaxInputs, o.QueueSize, o.WeaviateReserve)
	}
	return nil
}

// Server embeds texts for HTTP clients (Handler) with one loaded model. Create it with New,
// mark it ready with Warmup, stop it with Close.
type Server struct {
	model   *embedder.Model
	opts    Options
	metrics *metrics
	batcher *batcher
	ready   atomic.Bool
}

// New returns a server for the loaded model m (not yet ready: see Warmup). The caller keeps
// ownership of m and closes it after Close.
//
// Errors: invalid options.
func New(m *embedder.Model, opts Options) (*Server, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	s := &Server{model: m, opts: opts, metrics: newMetrics()}
	s.batcher = newBatcher(m, s.opts, s.metrics)
	return s, nil
}

// Registry returns the server's Prometheus registry (served at /metrics).
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// Ready reports whether Warmup has completed and Close has not begun.
func (s *Server) Ready() bool { return s.ready.Load() }

// Warmup embeds a query and a document of the model's full length once (ONNX Runtime
// allocates its buffers on the first runs), then marks the server ready
// (/.well-known/ready answers 204).
//
// Errors: an embedding failure; the server stays not ready.
func (s *Server) Warmup(ctx context.Context) error {
	long := strings.Repeat("warm ", s.model.Config().MaxPositions)
	if _, err := s.model.EmbedQueries(ctx, []string{"warm-up query", long}); err != nil {
		return fmt.Errorf("serving: warm-up: %w", err)
	}
	if _, err := s.model.EmbedTexts(ctx, []string{"warm-up document", long}); err != nil {
		return fmt.Errorf("serving: warm-up: %w", err)
	}
	s.setReady(true)
	return nil
}

func (s *Server) setReady(v bool) {
	s.ready.Store(v)
	if v {
		s.metrics.ready.Set(1)
	} else {
		s.metrics.ready.Set(0)
	}
}

// Drain marks the server not ready (so load balancers stop sending) while it keeps serving.
func (s *Server) Drain() { s.setReady(false) }

// Close marks the server not ready, stops admitting texts (ErrClosed, HTTP 503) and waits
// until every queued text is embedded and handed back. It does not close the model.
func (s *Server) Close() {
	s.setReady(false)
	s.batcher.close()
}

// Embed embeds texts for task through the queue and the micro-batcher and returns one vector
// per text and the texts' token count. It tokenizes on the caller's goroutine and does not
// wait for room in the queue.
//
// Errors: ErrQueueFull, ErrClosed, the caller's context, embedding failures.
func (s *Server) Embed(ctx context.Context, task Task, texts []string) ([][]float32, int, error) {
	return s.embed(ctx, task, texts, false, nil)
}

// embed is Embed; reserved requests (Weaviate's paths) may also take the places of
// Options.WeaviateReserve. leave, when not nil, takes the request out of the batcher's
// intake (batcher.arrive) once its texts are tokenized, just before they are queued.
func (s *Server) embed(ctx context.Context, task Task, texts []string, reserved bool, leave func()) ([][]float32, int, error) {
	if leave != nil {
		defer leave()
	}
	if len(texts) == 0 {
		return nil, 0, nil
	}
	seqs, tokens := s.batcher.sequences(task, texts)
	if leave != nil {
		leave()
	}
	j, err := s.batcher.submit(ctx, task, seqs, tokens, reserved)
	if err != nil {
		return nil, 0, err
	}
	select {
	case <-j.done:
		return j.vecs, tokens, j.err
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// metrics are a server's Prometheus collectors.
type metrics struct {
	reg         *prometheus.Registry
	duration    *prometheus.HistogramVec
	batchSize   prometheus.Histogram
	batchTokens prometheus.Histogram
	queueDepth  prometheus.Gauge
	rejected    *prometheus.CounterVec
	texts       *prometheus.CounterVec
	ready       prometheus.Gauge
}

// Rejection reasons (label reason of ragops_serve_rejected_total).
const (
	reasonQueueFull  = "queue_full"
	reasonTooLarge   = "too_large"
	reasonBadRequest = "bad_request"
	reasonWrongModel = "wrong_model"
)

func newMetrics() *metrics {
	const ns, sub = "ragops", "serve"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "request_duration_seconds", Help: "Latency of HTTP requests from arrival to the last byte, by handler, status code and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"handler", "code", "method"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "batch_size", Help: "Texts per inference batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		batchTokens: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "batch_tokens", Help: "Tokens (special tokens included) per inference batch.", Buckets: prometheus.ExponentialBuckets(8, 2, 12)}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "queue_depth", Help: "Texts admitted and waiting for an inference batch."}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "rejected_total", Help: "Requests refused, by reason (queue_full: 429; too_large: 413; bad_request: 400; wrong_model: 404)."}, []string{"reason"}),
		texts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "texts_total", Help: "Texts embedded, by task (query or document prefix)."}, []string{"task"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "ready", Help: "1 when the model is warmed up and the server is not draining."}),
	}
	for _, r := range []string{reasonQueueFull, reasonTooLarge, reasonBadRequest, reasonWrongModel} {
		m.rejected.WithLabelValues(r)
	}
	for _, t := range []Task{TaskQuery, TaskDocument} {
		m.texts.WithLabelValues(t.String())
	}
	m.reg.MustRegister(m.duration, m.batchSize, m.batchTokens, m.queueDepth, m.rejected, m.texts, m.ready,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
