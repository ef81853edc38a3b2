package serving

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/serving/specs"
)

// VectorsRequest is the body Weaviate's text2vec-transformers module posts to /vectors
// (vecRequest in Weaviate v1.37.6 usecases/modulecomponents/clients/transformers; it also
// sends the response fields dims, vector and error, empty).
type VectorsRequest struct {
	Text   string        `json:"text"`
	Config VectorsConfig `json:"config"`
}

// VectorsConfig is vecRequestConfig: the collection's poolingStrategy (Weaviate's default
// "masked_mean"), the task ("query" for nearText and hybrid queries, "passage" for objects)
// and the collection's dimensions setting, if any.
type VectorsConfig struct {
	PoolingStrategy string `json:"pooling_strategy,omitempty"`
	TaskType        string `json:"task_type,omitempty"`
	Dimensions      *int64 `json:"dimensions,omitempty"`
}

// VectorsResponse is the /vectors answer: Weaviate reads vector (and dims into a field it
// does not use); dim is the field of Weaviate's Python reference server.
type VectorsResponse struct {
	Text   string    `json:"text"`
	Dims   int       `json:"dims"`
	Dim    int       `json:"dim"`
	Vector []float32 `json:"vector"`
}

// Meta is the /meta answer.
type Meta struct {
	// Model is the folder's model name (ragops.json name).
	Model string `json:"model"`
	// ModelHash is the folder's content hash (embedder.FolderHash).
	ModelHash string `json:"modelHash"`
	// Dimensions is the vector length.
	Dimensions int `json:"dimensions"`
	// MaxPositions is the model's token limit; longer texts are cut.
	MaxPositions int `json:"maxPositions"`
	// Pooling is "mean" or "cls"; Normalize whether vectors have unit length.
	Pooling   embedder.Pooling `json:"pooling"`
	Normalize bool             `json:"normalize"`
	// QueryPrefix and DocumentPrefix are prepended per task.
	QueryPrefix    string `json:"queryPrefix"`
	DocumentPrefix string `json:"documentPrefix"`
	// Precision and Provider say how the model runs (e.g. fp32 on "cpu").
	Precision embedder.Precision `json:"precision"`
	Provider  string             `json:"provider"`
}

// Meta returns what /meta reports.
func (s *Server) Meta() Meta {
	c := s.model.Config()
	return Meta{Model: c.Name, ModelHash: s.opts.ModelHash, Dimensions: c.Dimension, MaxPositions: c.MaxPositions,
		Pooling: c.Pooling, Normalize: c.Normalize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix,
		Precision: s.opts.Precision, Provider: s.model.Provider()}
}

// Handler returns the HTTP API: /vectors, /meta, /.well-known/{live,ready}, /v1/embeddings,
// /v1/models and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	inst := func(name string, h http.HandlerFunc) http.Handler {
		obs := s.metrics.duration.MustCurryWith(prometheus.Labels{"handler": name})
		return tracing.Handler(name, promhttp.InstrumentHandlerDuration(obs, h))
	}
	vectors := inst("vectors", func(w http.ResponseWriter, r *http.Request) { s.handleVectors(w, r, 0, false) })
	mux.Handle("POST /vectors", vectors)
	mux.Handle("POST /vectors/", vectors)
	// Weaviate's paths: the task is the path's, and the queue's reserve is open to them.
	for path, task := range map[string]Task{specs.QueryPath: TaskQuery, specs.PassagePath: TaskDocument} {
		h := inst("vectors", func(w http.ResponseWriter, r *http.Request) { s.handleVectors(w, r, task, true) })
		mux.Handle("POST "+path+"/vectors", h)
		mux.Handle("POST "+path+"/vectors/", h)
	}
	mux.Handle("POST /v1/embeddings", inst("embeddings", s.handleEmbeddings))
	mux.Handle("GET /v1/models", inst("models", s.handleModels))
	mux.Handle("GET /meta", inst("meta", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Meta()) }))
	mux.HandleFunc("GET /.well-known/live", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /.well-known/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// apiError is an error with its HTTP status and the rejection reason it counts as.
type apiError struct {
	status int
	reason string
	code   string // OpenAI error type
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, reason: reasonBadRequest, code: "invalid_request_error", msg: fmt.Sprintf(format, args...)}
}

// readBody reads a JSON body of at most MaxRequestBytes into v.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: http.StatusRequestEntityTooLarge, reason: reasonTooLarge, code: "invalid_request_error",
				msg: fmt.Sprintf("request body exceeds the limit of %d bytes (ragops serve --max-request-bytes)", mbe.Limit)}
		}
		return badRequest("reading request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("malformed JSON: %v", err)
	}
	return nil
}

// embedError maps an Embed error to its HTTP answer.
func embedError(err error) *apiError {
	switch {
	case errors.Is(err, ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, reason: reasonQueueFull, code: "rate_limit_exceeded",
			msg: "queue full: too many texts are waiting; retry after a short pause (ragops serve --queue-size)"}
	case errors.Is(err, ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, code: "server_error", msg: "the model server is shutting down"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, code: "server_error", msg: "request ended before its embedding: " + err.Error()}
	}
	return &apiError{status: http.StatusInternalServerError, code: "server_error", msg: err.Error()}
}

// count records a rejection in ragops_serve_rejected_total.
func (s *Server) count(e *apiError) {
	if e.reason != "" {
		s.metrics.rejected.WithLabelValues(e.reason).Inc()
	}
}

// handleVectors answers a text2vec-transformers request. On Weaviate's paths (weaviate true)
// the task is pathTask whatever the request's task_type (a conflicting one is 400), and the
// request may take the queue's reserve; on /vectors it is the request's task_type (passage
// when absent).
func (s *Server) handleVectors(w http.ResponseWriter, r *http.Request, pathTask Task, weaviate bool) {
	var req VectorsRequest
	fail := func(e *apiError) {
		s.count(e)
		if e.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, e.status, map[string]string{"error": e.msg})
	}
	if e := s.readBody(w, r, &req); e != nil {
		fail(e)
		return
	}
	// Received: only the server's own work (checks, tokenizing) remains before it is queued.
	leave := s.batcher.arrive()
	defer leave()
	task, e := s.checkVectors(&req)
	if e == nil && weaviate && req.Config.TaskType != "" && task != pathTask {
		e = badRequest("task_type %q posted to %s: this path embeds %s texts only", req.Config.TaskType, r.URL.Path, pathTask)
	}
	if e != nil {
		fail(e)
		return
	}
	if weaviate {
		task = pathTask
	}
	vecs, _, err := s.embed(r.Context(), task, []string{req.Text}, weaviate, leave)
	if err != nil {
		fail(embedError(err))
		return
	}
	d := len(vecs[0])
	writeJSON(w, http.StatusOK, VectorsResponse{Text: req.Text, Dims: d, Dim: d, Vector: vecs[0]})
}

// checkVectors validates a /vectors request against the model and returns its task.
func (s *Server) checkVectors(req *VectorsRequest) (Task, *apiError) {
	if strings.TrimSpace(req.Text) == "" {
		return 0, badRequest("text is empty")
	}
	task, e := parseTask(req.Config.TaskType, TaskDocument)
	if e != nil {
		return 0, e
	}
	c := s.model.Config()
	switch p := req.Config.PoolingStrategy; {
	case p == "":
	case (p == "masked_mean" || p == "mean") && c.Pooling == embedder.PoolMean:
	case p == "cls" && c.Pooling == embedder.PoolCLS:
	default:
		return 0, badRequest("pooling_strategy %q does not match model %s, which pools by %s (set the collection's poolingStrategy to %s)",
			p, c.Name, c.Pooling, weaviatePooling(c.Pooling))
	}
	if d := req.Config.Dimensions; d != nil && *d != int64(c.Dimension) {
		return 0, badRequest("dimensions %d: model %s has %d dimensions and is not truncated", *d, c.Name, c.Dimension)
	}
	return task, nil
}

// weaviatePooling is the text2vec-transformers poolingStrategy that names pooling p.
func weaviatePooling(p embedder.Pooling) string {
	if p == embedder.PoolCLS {
		return "cls"
	}
	return "masked_mean"
}

// parseTask reads a task_type / input_type: "query", or "passage" / "document"; empty means def.
func parseTask(s string, def Task) (Task, *apiError) {
	switch s {
	case "":
		return def, nil
	case "query":
		return TaskQuery, nil
	case "passage", "document":
		return TaskDocument, nil
	}
	return 0, badRequest("task type %q: want query, passage or document", s)
}

// EmbeddingsRequest is an OpenAI embeddings request (POST /v1/embeddings). Input is a string
// or a list of strings (token-id arrays are refused). InputType is NVIDIA NIM's extension.
type EmbeddingsRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	Dimensions     *int64          `json:"dimensions,omitempty"`
	InputType      string          `json:"input_type,omitempty"`
	User           string          `json:"user,omitempty"`
}

// Embedding is one entry of EmbeddingsResponse.Data: Embedding is []float32, or a base64
// string of little-endian float32s with encoding_format "base64".
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// Usage counts the request's tokens (special tokens and prefix included).
type Usage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// EmbeddingsResponse is the OpenAI embeddings answer.
type EmbeddingsResponse struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  Usage       `json:"usage"`
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	fail := func(e *apiError) {
		s.count(e)
		if e.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, e.status, map[string]any{"error": map[string]any{"message": e.msg, "type": e.code, "code": http.StatusText(e.status)}})
	}
	var req EmbeddingsRequest
	if e := s.readBody(w, r, &req); e != nil {
		fail(e)
		return
	}
	leave := s.batcher.arrive()
	defer leave()
	texts, task, e := s.checkEmbeddings(&req)
	if e != nil {
		fail(e)
		return
	}
	vecs, tokens, err := s.embed(r.Context(), task, texts, false, leave)
	if err != nil {
		fail(embedError(err))
		return
	}
	resp := EmbeddingsResponse{Object: "list", Model: s.model.Config().Name, Data: make([]Embedding, len(vecs)),
		Usage: Usage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vecs {
		var emb any = v
		if req.EncodingFormat == "base64" {
			emb = encodeBase64(v)
		}
		resp.Data[i] = Embedding{Object: "embedding", Index: i, Embedding: emb}
	}
	writeJSON(w, http.StatusOK, resp)
}

// checkEmbeddings validates an OpenAI request and returns its texts and task.
func (s *Server) checkEmbeddings(req *EmbeddingsRequest) ([]string, Task, *apiError) {
	c := s.model.Config()
	if req.Model != "" && req.Model != c.Name && req.Model != s.opts.ModelHash {
		return nil, 0, &apiError{status: http.StatusNotFound, reason: reasonWrongModel, code: "model_not_found",
			msg: fmt.Sprintf("model %q is not served here: this server serves %q (%s)", req.Model, c.Name, s.opts.ModelHash)}
	}
	var texts []string
	raw := bytes.TrimSpace(req.Input)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, 0, badRequest("input is missing")
	case raw[0] == '"':
		var t string
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, 0, badRequest("input: %v", err)
		}
		texts = []string{t}
	default:
		if err := json.Unmarshal(raw, &texts); err != nil {
			return nil, 0, badRequest("input must be a string or a list of strings (token arrays are not accepted): %v", err)
		}
	}
	if len(texts) == 0 {
		return nil, 0, badRequest("input is an empty list")
	}
	if len(texts) > s.opts.MaxInputs {
		return nil, 0, &apiError{status: http.StatusRequestEntityTooLarge, reason: reasonTooLarge, code: "invalid_request_error",
			msg: fmt.Sprintf("input has %d texts, over the limit of %d per request (ragops serve --max-inputs)", len(texts), s.opts.MaxInputs)}
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return nil, 0, badRequest("input[%d] is empty", i)
		}
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, 0, badRequest("encoding_format %q: want float or base64", req.EncodingFormat)
	}
	if d := req.Dimensions; d != nil && *d != int64(c.Dimension) {
		return nil, 0, badRequest("dimensions %d: model %s has %d dimensions and is not truncated", *d, c.Name, c.Dimension)
	}
	task, e := parseTask(req.InputType, TaskQuery)
	return texts, task, e
}

// encodeBase64 returns v as base64 of little-endian float32s (OpenAI's encoding_format base64).
func encodeBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": s.model.Config().Name, "object": "model", "owned_by": "ragops"},
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
