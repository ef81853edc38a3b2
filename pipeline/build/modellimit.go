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
// (registry.CheckModelLimits against registry.NewModelLimits of its ragops.json and, for a
// document prefix, its tokenizer) before the model is loaded, with a *plan.Failure of
// plan.FailureModelLimitExceeded wrapping the *registry.ModelLimitError.
func checkModelLimits(p plan.Build) error {
	cfg, err := embedder.ReadConfig(p.ModelDir)
	if err != nil {
		return err
	}
	var tok *tokenize.Tokenizer
	if cfg.DocumentPrefix != "" {
		if tok, err = tokenize.Load(filepath.Join(p.ModelDir, "tokenizer.json")); err != nil {
			return fmt.Errorf("model %s: %w", cfg.Name, err)
		}
	}
	l := registry.NewModelLimits(cfg.Name, cfg.MaxPositions, cfg.DocumentPrefix, tok)
	if err := registry.CheckModelLimits(p.Strategy, l); err != nil {
		return &plan.Failure{Reason: plan.FailureModelLimitExceeded, Err: err}
	}
	return nil
}
