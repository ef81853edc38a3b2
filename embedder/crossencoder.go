package embedder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/ragops/ragops/embedder/tokenize"
	onnx "github.com/yalue/onnxruntime_go"
)

// CrossEncoderConfig is the ragops.json of a cross-encoder (reranker) model folder:
//
//	{"name": "...", "kind": "cross-encoder", "maxPositions": 512, "scoreOutput": "logits",
//	 "inputs": {"inputIds": "input_ids", "attentionMask": "attention_mask",
//	            "tokenTypeIds": "token_type_ids"}}
//
// hack/export-model/export.sh --cross-encoder writes one.
type CrossEncoderConfig struct {
	// Name identifies the model.
	Name string `json:"name"`
	// Kind must be KindCrossEncoder.
	Kind string `json:"kind"`
	// Weights says where the weights come from (informational).
	Weights string `json:"weights,omitempty"`
	// MaxPositions is the model's position limit in tokens, special tokens included.
	MaxPositions int `json:"maxPositions"`
	// ScoreOutput names the model output that holds the relevance logits, float32 [batch, 1].
	ScoreOutput string `json:"scoreOutput"`
	// Inputs names the model inputs; TokenTypeIDs may be empty for models without one.
	Inputs struct {
		InputIDs      string `json:"inputIds"`
		AttentionMask string `json:"attentionMask"`
		TokenTypeIDs  string `json:"tokenTypeIds"`
	} `json:"inputs"`
}

// ReadCrossEncoderConfig reads and checks dir/ragops.json of a cross-encoder folder.
func ReadCrossEncoderConfig(dir string) (CrossEncoderConfig, error) {
	var c CrossEncoderConfig
	p := filepath.Join(dir, ConfigFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		return c, fmt.Errorf("cross-encoder config: %w", err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("cross-encoder config %s: invalid JSON: %w", p, err)
	}
	switch {
	case c.Kind != KindCrossEncoder:
		return c, fmt.Errorf("cross-encoder config %s: kind %q must be %q (an embedding model folder is loaded with Load)", p, c.Kind, KindCrossEncoder)
	case c.MaxPositions < 8:
		return c, fmt.Errorf("cross-encoder config %s: maxPositions %d must be >= 8", p, c.MaxPositions)
	case c.ScoreOutput == "":
		return c, fmt.Errorf("cross-encoder config %s: scoreOutput is empty", p)
	case c.Inputs.InputIDs == "" || c.Inputs.AttentionMask == "":
		return c, fmt.Errorf("cross-encoder config %s: inputs.inputIds and inputs.attentionMask are required", p)
	}
	return c, nil
}

// CrossEncoder scores (query, passage) pairs with a BERT-family sequence-classification
// ONNX model (Nogueira & Cho 2019, "Passage Re-ranking with BERT", arXiv:1901.04085; the
// layout of cross-encoder/ms-marco-MiniLM-L-6-v2). It implements evaluator.Reranker. Its
// methods are safe for concurrent use, except Close.
//
// Tests read RAGOPS_RERANK_MODEL_DIR (hack/prepare.d/reranker.sh prepares it with
// hack/export-model/export.sh --cross-encoder) and RAGOPS_ONNXRUNTIME_LIB; without them they
// skip, and with RAGOPS_REQUIRE_ALL=1 they fail, naming the script. No package ships
// cross-encoder weights, so that folder has seeded random weights: the tests check
// tokenization, truncation, batching and scores against Python onnxruntime on the same file,
// not ranking quality.
type CrossEncoder struct {
	cfg      CrossEncoderConfig
	opts     Options
	tok      *tokenize.Tokenizer
	sess     *onnx.DynamicAdvancedSession
	provider string
	typeIDs  bool

	truncated atomic.Int64
	tokens    atomic.Int64
}

// LoadCrossEncoder opens the cross-encoder folder dir (model.onnx, tokenizer.json,
// ragops.json per CrossEncoderConfig), loads the ONNX Runtime library if needed and creates
// a session. Of opts, LibraryPath, Device, CUDADeviceID, AllowCPUFallback, IntraOpThreads,
// Spinning, BatchTokens, MaxBatch and FixedBatch apply. The model's inputs must be int64
// [batch, sequence] and its score output float32 [batch, 1]; a mismatch is an error naming
// the input or output.
func LoadCrossEncoder(dir string, opts Options) (*CrossEncoder, error) {
	cfg, err := ReadCrossEncoderConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := opts.runDefaults(cfg.MaxPositions); err != nil {
		return nil, err
	}
	switch {
	case opts.BatchTokens < cfg.MaxPositions:
		return nil, fmt.Errorf("embedder: BatchTokens %d is below the cross-encoder's %d positions", opts.BatchTokens, cfg.MaxPositions)
	case opts.MaxBatch < 1 || opts.FixedBatch < 0 || opts.IntraOpThreads < 0:
		return nil, fmt.Errorf("embedder: MaxBatch must be >= 1 and FixedBatch, IntraOpThreads >= 0")
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	if opts.Precision != FP32 {
		return nil, fmt.Errorf("embedder: cross-encoder %s: precision %q: only fp32 cross-encoders are exported", dir, opts.Precision)
	}
	modelPath, ins, outs, err := openModel(dir, ModelFile, opts.LibraryPath)
	if err != nil {
		return nil, err
	}
	c := &CrossEncoder{cfg: cfg, opts: opts, tok: tok}
	names := []string{cfg.Inputs.InputIDs, cfg.Inputs.AttentionMask}
	if cfg.Inputs.TokenTypeIDs != "" {
		names = append(names, cfg.Inputs.TokenTypeIDs)
		c.typeIDs = true
	}
	if err := checkInputs(modelPath, ins, names); err != nil {
		return nil, err
	}
	if err := checkScoreOutput(modelPath, outs, cfg.ScoreOutput); err != nil {
		return nil, err
	}
	c.sess, c.provider, err = newSession(modelPath, opts, names, cfg.ScoreOutput)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// checkScoreOutput verifies that the model has output name as float32 [batch, 1].
func checkScoreOutput(path string, outs []onnx.InputOutputInfo, name string) error {
	for _, o := range outs {
		if o.Name != name {
			continue
		}
		d := o.Dimensions
		if o.DataType != onnx.TensorElementDataTypeFloat || len(d) != 2 || (d[1] > 0 && d[1] != 1) {
			return fmt.Errorf("embedder: %s output %q is %v %v, want float32 [batch, 1]", path, name, o.DataType, d)
		}
		return nil
	}
	return fmt.Errorf("embedder: %s has no output %q (ragops.json scoreOutput)", path, name)
}

// Config returns the folder's configuration.
func (c *CrossEncoder) Config() CrossEncoderConfig { return c.cfg }

// Provider says where inference runs: "cpu", "cuda" or "cpu (CUDA fallback: reason)".
func (c *CrossEncoder) Provider() string { return c.provider }

// Stats returns the counters since LoadCrossEncoder: real tokens encoded (special tokens
// included) and passages truncated to fit the model's positions.
func (c *CrossEncoder) Stats() Stats {
	return Stats{Tokens: c.tokens.Load(), Truncated: c.truncated.Load()}
}

// Close releases the ONNX Runtime session. It must not run concurrently with Score; later
// calls to Score return an error.
func (c *CrossEncoder) Close() error {
	if c.sess == nil {
		return nil
	}
	err := c.sess.Destroy()
	c.sess = nil
	return err
}

// Score returns one relevance score per passage, in the order of passages: the model's
// logit for the pair encoded as [CLS] query [SEP] passage [SEP] with token type 0 up to
// and including the first [SEP] and 1 after it (the BERT pair template). Higher is more
// relevant; the scores are raw logits (no sigmoid), comparable within one model. A passage
// that does not fit in the model's positions is cut at the end (the query never is; counted
// in Stats.Truncated). Pairs are run in length-sorted batches under Options.BatchTokens.
// An empty passages list returns an empty slice. Errors: a query too long to leave room for
// a passage token, a closed model, a cancelled ctx, or a failed inference.
func (c *CrossEncoder) Score(ctx context.Context, query string, passages []string) ([]float64, error) {
	if len(passages) == 0 {
		return []float64{}, nil
	}
	q := c.tok.Encode(query, false).IDs
	seqs := make([][]int64, len(passages))
	types := make([][]int64, len(passages))
	for i, p := range passages {
		ids, tt, cut, err := c.encodePair(q, c.tok.Encode(p, false).IDs)
		if err != nil {
			return nil, fmt.Errorf("embedder: cross-encoder: query %q: %w", truncateText(query, 80), err)
		}
		if cut {
			c.truncated.Add(1)
		}
		seqs[i], types[i] = ids, tt
	}
	scores := make([]float64, len(passages))
	for _, b := range planBatches(seqs, c.opts) {
		bs := make([][]int64, len(b))
		bt := make([][]int64, len(b))
		for k, i := range b {
			bs[k], bt[k] = seqs[i], types[i]
		}
		out, err := c.runBatch(ctx, bs, bt)
		if err != nil {
			return nil, err
		}
		for k, i := range b {
			scores[i] = float64(out[k])
		}
	}
	return scores, nil
}

// encodePair builds [CLS] q [SEP] p [SEP] and its token types (0 through the first [SEP],
// 1 after), cutting p's end so that the pair fits in MaxPositions; cut reports that.
func (c *CrossEncoder) encodePair(q, p []int64) (ids, types []int64, cut bool, err error) {
	room := c.cfg.MaxPositions - 3 - len(q)
	if room < 0 || (room == 0 && len(p) > 0) {
		return nil, nil, false, fmt.Errorf("the query's %d tokens leave no room for a passage in the model's %d positions (3 special tokens)", len(q), c.cfg.MaxPositions)
	}
	if len(p) > room {
		p, cut = p[:room], true
	}
	n := len(q) + len(p) + 3
	ids = make([]int64, 0, n)
	ids = append(ids, c.tok.CLS())
	ids = append(ids, q...)
	ids = append(ids, c.tok.SEP())
	ids = append(ids, p...)
	ids = append(ids, c.tok.SEP())
	types = make([]int64, n)
	for j := len(q) + 2; j < n; j++ {
		types[j] = 1
	}
	return ids, types, cut, nil
}

// runBatch scores one batch of encoded pairs, right-padded to the longest.
func (c *CrossEncoder) runBatch(ctx context.Context, seqs, types [][]int64) ([]float32, error) {
	if c.sess == nil {
		return nil, fmt.Errorf("embedder: cross-encoder is closed")
	}
	out, _, release, err := runSession(ctx, c.sess, seqs, types, c.typeIDs, &c.tokens, "cross-encoder inference", c.cfg.ScoreOutput)
	if err != nil {
		return nil, err
	}
	defer release()
	b := len(seqs)
	if sh := out.GetShape(); len(sh) != 2 || sh[0] != int64(b) || sh[1] != 1 {
		return nil, fmt.Errorf("embedder: output %q shape %v, want [%d 1]", c.cfg.ScoreOutput, sh, b)
	}
	return append([]float32(nil), out.GetData()...), nil
}

// truncateText shortens s to at most n bytes for error messages, on a rune boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
