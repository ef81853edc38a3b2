package build

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/plan"
)

// TestRunRefusesAModelFolderThatChangedUnderItsRevision: a plan carrying the revision's
// recorded model hash runs on the same folder and is refused, before the model is loaded or
// Weaviate is touched (the plan names none), once one byte of the folder's tokenizer changed.
func TestRunRefusesAModelFolderThatChangedUnderItsRevision(t *testing.T) {
	src := need(t, "RAGOPS_MODEL_DIR", "run hack/prepare.d/embedder.sh")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	recorded, err := embedder.FolderHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Build{ModelDir: dir, ModelHash: recorded, Revision: "r1", Collection: "Rag_unused",
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 128}}
	if got, err := checkModelHash(p); err != nil || got != recorded {
		t.Fatalf("unchanged folder: hash %s, err %v; want %s and no error", got, err, recorded)
	}
	tok, err := os.ReadFile(filepath.Join(src, embedder.TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, embedder.TokenizerFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, embedder.TokenizerFile), append(tok, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{})
	if err == nil {
		t.Fatal("Run embedded with a changed model folder")
	}
	for _, s := range []string{string(plan.FailureModelChanged) + ":", "revision r1 was embedded with " + recorded} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not contain %q", err.Error(), s)
		}
	}
}
