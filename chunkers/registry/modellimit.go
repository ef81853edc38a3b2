package registry

import (
	"errors"
	"fmt"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
)

// ModelLimits are the figures of an embedding model that bound a strategy's chunk size,
// read from the model folder's ragops.json (embedder.Config) and its tokenizer.
type ModelLimits struct {
	// Name of the model (ragops.json "name").
	Name string
	// MaxPositions is the model's position limit in tokens, special tokens included.
	MaxPositions int
	// SpecialTokens the model adds around every sequence ([CLS] and [SEP]: 2).
	SpecialTokens int
	// DocumentPrefixTokens is the token count of the document prefix the model puts in front
	// of every chunk (ragops.json "documentPrefix", e.g. "passage: ").
	DocumentPrefixTokens int
	// HeadingPathTokens is room a heading-path prefix takes when it is not counted inside the
	// strategy's size (0 when it is, or when there is none). A hook for the heading-path
	// prefix option of issue 15.
	HeadingPathTokens int
}

// SpecialTokens is the count of special tokens a BERT-style model adds around every
// sequence: [CLS] and [SEP].
const SpecialTokens = 2

// NewModelLimits returns the limits of a model called name with maxPositions positions (its
// ragops.json "maxPositions"), [CLS] and [SEP] around every sequence, and documentPrefix
// (ragops.json "documentPrefix", e.g. "passage: ") in front of every chunk, measured by tok,
// the model's tokenizer; tok is not used, and may be nil, when documentPrefix is empty. A
// build (pipeline/build) and the preview (preview.LoadModel) both build their limits here,
// so the preview refuses what the build refuses.
func NewModelLimits(name string, maxPositions int, documentPrefix string, tok chunkers.Sizer) ModelLimits {
	l := ModelLimits{Name: name, MaxPositions: maxPositions, SpecialTokens: SpecialTokens}
	if documentPrefix != "" {
		l.DocumentPrefixTokens = tok.Size(documentPrefix)
	}
	return l
}

// TextTokens returns how many tokens of chunk text fit in one sequence: MaxPositions less
// the special tokens and the prefixes.
func (l ModelLimits) TextTokens() int {
	return l.MaxPositions - l.SpecialTokens - l.DocumentPrefixTokens - l.HeadingPathTokens
}

// ModelLimitError reports a ChunkingStrategy whose chunks cannot fit the Index's embedding
// model: every chunk above the model's room would be cut before it is embedded.
type ModelLimitError struct {
	// Field is the spec field at fault: spec.size or spec.late.window.
	Field string
	// Value is the field's value in tokens.
	Value int
	// Need is the positions one sequence needs at that value (special tokens and prefixes
	// included).
	Need int
	// Limit is the model's MaxPositions.
	Limit int
	// Model names the model.
	Model string
}

// Error names the field, its value, the positions it needs and the model's limit.
func (e *ModelLimitError) Error() string {
	return fmt.Sprintf("%s %d tokens needs %d positions, over model %s's limit of %d positions (room for %d tokens of text per chunk)",
		e.Field, e.Value, e.Need, e.Model, e.Limit, e.Value-(e.Need-e.Limit))
}

// IsModelLimit reports whether err is or wraps a *ModelLimitError.
func IsModelLimit(err error) bool {
	var e *ModelLimitError
	return errors.As(err, &e)
}

// CheckModelLimits returns a *ModelLimitError when spec's chunks cannot fit the model: in
// the Tokens unit, a size (Fixed, SlidingWindow's window, and every packing strategy's
// maximum) above TextTokens, so chunks would be truncated before embedding; with late
// chunking, a window above MaxPositions (the window holds the special tokens). Sizes in
// Characters are not checked here: a character count does not bound a token count from
// below, and the embedder counts the chunks it cuts (embedder.Stats.TruncatedChunks). An
// unset size means the CRD default (DefaultSize).
func CheckModelLimits(spec v1alpha1.ChunkingStrategySpec, l ModelLimits) error {
	if spec.Late != nil && spec.Late.Enabled {
		if w := int(spec.Late.Window); w > l.MaxPositions {
			return &ModelLimitError{Field: "spec.late.window", Value: w, Need: w, Limit: l.MaxPositions, Model: l.Name}
		}
		return nil // late chunking pools every token from some window: chunks are never cut
	}
	if spec.Unit != v1alpha1.UnitTokens && spec.Unit != "" {
		return nil
	}
	size := int(spec.Size)
	if size == 0 {
		size = DefaultSize
	}
	if room := l.TextTokens(); size > room {
		return &ModelLimitError{Field: "spec.size", Value: size, Need: size + (l.MaxPositions - room), Limit: l.MaxPositions, Model: l.Name}
	}
	return nil
}
