package registry

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers"
)

// Validate checks a spec beyond the CRD's schema and CEL rules, as the ChunkingStrategy
// controller does before it marks a strategy Ready and the Index controller before a build,
// and as `ragops chunk` does before it reads a file: every heading pattern compiles as Go
// RE2, a late window overlap leaves the windows room to advance (at most the window less
// 3), and New accepts the spec (token sizing is checked with chunkers.WordSizer; the model's
// tokenizer and limits come with the Index, see CheckModelLimits). Errors name the field,
// e.g. `spec.heading.patterns[0].pattern "(": ...` or `spec: registry: spec.minSize: ...`.
func Validate(spec v1alpha1.ChunkingStrategySpec) error {
	if spec.Heading != nil {
		for i, p := range spec.Heading.Patterns {
			if _, err := regexp.Compile(p.Pattern); err != nil {
				return fmt.Errorf("spec.heading.patterns[%d].pattern %q: %v", i, p.Pattern, err)
			}
		}
	}
	if l := spec.Late; l != nil && l.Enabled && l.Window > 0 && int(l.WindowOverlap) > int(l.Window)-3 {
		// The embedder's bound (embedder.Options.WindowOverlap): windows must advance past
		// [CLS] and [SEP].
		return fmt.Errorf("spec.late.windowOverlap %d must be at most spec.late.window %d less 3 (%d)", l.WindowOverlap, l.Window, l.Window-3)
	}
	if _, err := New(spec, chunkers.WordSizer{}, validationEmbedder{}); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// validationEmbedder stands in for the model while a spec is validated: building a chunker
// never embeds, so it is never called.
type validationEmbedder struct{}

func (validationEmbedder) EmbedSentences(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("validation embedder cannot embed")
}
