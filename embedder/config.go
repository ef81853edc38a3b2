package embedder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ConfigFile is the name of the model folder's ragops configuration file.
const ConfigFile = "ragops.json"

// ModelFile is the fp32 ONNX graph of a model folder.
const ModelFile = "model.onnx"

// Pooling is how a sequence's token states become one vector.
type Pooling string

// Pooling methods.
const (
	// PoolMean averages the states of all tokens of the sequence, special tokens included
	// (sentence-transformers' mean pooling).
	PoolMean Pooling = "mean"
	// PoolCLS takes the state of the first ([CLS]) token (BGE models).
	PoolCLS Pooling = "cls"
)

// Model kinds (ragops.json "kind").
const (
	// KindEmbedding is an embedding model (Load); an empty kind means the same.
	KindEmbedding = "embedding"
	// KindCrossEncoder is a cross-encoder reranker (LoadCrossEncoder, CrossEncoderConfig).
	KindCrossEncoder = "cross-encoder"
)

// Config describes an exported model folder (model.onnx, tokenizer.json, ragops.json).
type Config struct {
	// Name identifies the model (it is part of an index revision).
	Name string `json:"name"`
	// Kind is KindEmbedding or empty; ReadConfig refuses other kinds.
	Kind string `json:"kind,omitempty"`
	// MaxPositions is the model's position limit in tokens, special tokens included.
	MaxPositions int `json:"maxPositions"`
	// Dimension is the width of the token states and of the embeddings.
	Dimension int `json:"dimension"`
	// Pooling is used for naive (whole-sequence) embeddings; late chunking always averages
	// the token states inside a chunk's span.
	Pooling Pooling `json:"pooling"`
	// Normalize scales every embedding to unit L2 length.
	Normalize bool `json:"normalize"`
	// QueryPrefix is prepended to queries (e.g. "query: " or a BGE instruction).
	QueryPrefix string `json:"queryPrefix"`
	// DocumentPrefix is prepended to documents and chunks.
	DocumentPrefix string `json:"documentPrefix"`
	// TokenStatesOutput names the model output that holds [batch, sequence, Dimension] states.
	TokenStatesOutput string `json:"tokenStatesOutput"`
	// Precisions maps a precision other than fp32 to its ONNX file in the folder, e.g.
	// {"fp16": "model.fp16.onnx"} (hack/export-model/fp16.py); same inputs and output.
	Precisions map[Precision]string `json:"precisions,omitempty"`
	// Inputs names the model inputs; TokenTypeIDs may be empty for models without one.
	Inputs struct {
		InputIDs      string `json:"inputIds"`
		AttentionMask string `json:"attentionMask"`
		TokenTypeIDs  string `json:"tokenTypeIds"`
	} `json:"inputs"`
}

// ReadConfig reads and checks dir/ragops.json.
func ReadConfig(dir string) (Config, error) {
	var c Config
	p := filepath.Join(dir, ConfigFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		return c, fmt.Errorf("model config: %w", err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("model config %s: invalid JSON: %w", p, err)
	}
	switch {
	case c.Kind == KindCrossEncoder:
		return c, fmt.Errorf("model config %s: kind %q is a reranker, not an embedding model: load it with LoadCrossEncoder", p, c.Kind)
	case c.Kind != "" && c.Kind != KindEmbedding:
		return c, fmt.Errorf("model config %s: kind %q must be %q (or empty)", p, c.Kind, KindEmbedding)
	case c.MaxPositions < 8:
		return c, fmt.Errorf("model config %s: maxPositions %d must be >= 8", p, c.MaxPositions)
	case c.Dimension <= 0:
		return c, fmt.Errorf("model config %s: dimension %d must be > 0", p, c.Dimension)
	case c.Pooling != PoolMean && c.Pooling != PoolCLS:
		return c, fmt.Errorf("model config %s: pooling %q must be %q or %q", p, c.Pooling, PoolMean, PoolCLS)
	case c.TokenStatesOutput == "":
		return c, fmt.Errorf("model config %s: tokenStatesOutput is empty", p)
	case c.Inputs.InputIDs == "" || c.Inputs.AttentionMask == "":
		return c, fmt.Errorf("model config %s: inputs.inputIds and inputs.attentionMask are required", p)
	}
	for pr, f := range c.Precisions {
		if pr == FP32 || f == "" || f != filepath.Base(f) {
			return c, fmt.Errorf("model config %s: precisions[%q] = %q: want a precision other than fp32 and a file name in the folder", p, pr, f)
		}
	}
	return c, nil
}

// modelFile returns the folder's ONNX file for precision p (ModelFile for fp32 or empty);
// an error names the variant the folder lacks and how to export it.
func (c Config) modelFile(dir string, p Precision) (string, error) {
	if p == "" || p == FP32 {
		return ModelFile, nil
	}
	f, ok := c.Precisions[p]
	if !ok {
		return "", fmt.Errorf("embedder: model %s (%s) has no %s variant: ragops.json names none in \"precisions\" (export it with hack/export-model/fp16.py --dir %s)", c.Name, dir, p, dir)
	}
	return f, nil
}
