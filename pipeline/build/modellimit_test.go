package build

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/internal/plan"
)

// TestRunRefusesAStrategyOverTheModelLimit: a build plan with Fixed 800 tokens for
// all-MiniLM-L6-v2 (512 positions) fails before the model is loaded or Weaviate is touched,
// with a ModelLimitError naming spec.size, 802 positions and the limit 512; the CRD default
// and a late window of 512 pass the check.
func TestRunRefusesAStrategyOverTheModelLimit(t *testing.T) {
	dir := os.Getenv("RAGOPS_MODEL_DIR")
	if dir == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal("RAGOPS_MODEL_DIR is not set: run hack/prepare.d/embedder.sh")
		}
		t.Skip("RAGOPS_MODEL_DIR is not set: run hack/prepare.d/embedder.sh")
	}
	p := plan.Build{ModelDir: dir, Collection: "Rag_unused", Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 800, Overlap: 400}}
	_, err := Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{})
	if !registry.IsModelLimit(err) {
		t.Fatalf("Run: %v, want a ModelLimitError", err)
	}
	for _, s := range []string{string(plan.FailureModelLimitExceeded) + ":", "spec.size 800", "802 positions", "limit of 512"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not contain %q", err.Error(), s)
		}
	}
	for _, ok := range []ragopsv1alpha1.ChunkingStrategySpec{
		{Type: ragopsv1alpha1.StrategyFixed, Size: registry.DefaultSize},
		{Type: ragopsv1alpha1.StrategyFixed, Size: 800, Late: &ragopsv1alpha1.LateChunkingOptions{Enabled: true, Window: 512, WindowOverlap: 128}},
	} {
		p.Strategy = ok
		if err := checkModelLimits(p); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}
