package build

import (
	"fmt"
	"path/filepath"

	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/embedder/tokenize"
	"github.com/ragops/ragops/internal/plan"
)

// checkModelLimits refuses a build whose strategy cannot fit the model in p.ModelDir
// (registry.CheckModelLimits against its ragops.json and, for a document prefix, its
// tokenizer) before the model is loaded, with a *plan.Failure of
// plan.FailureModelLimitExceeded wrapping the *registry.ModelLimitError.
func checkModelLimits(p plan.Build) error {
	cfg, err := embedder.ReadConfig(p.ModelDir)
	if err != nil {
		return err
	}
	l := registry.ModelLimits{Name: cfg.Name, MaxPositions: cfg.MaxPositions, SpecialTokens: 2}
	if cfg.DocumentPrefix != "" {
		tok, err := tokenize.Load(filepath.Join(p.ModelDir, "tokenizer.json"))
		if err != nil {
			return fmt.Errorf("model %s: %w", cfg.Name, err)
		}
		l.DocumentPrefixTokens = tok.Size(cfg.DocumentPrefix)
	}
	if err := registry.CheckModelLimits(p.Strategy, l); err != nil {
		return &plan.Failure{Reason: plan.FailureModelLimitExceeded, Err: err}
	}
	return nil
}
