// Package datasets locates the project's real test data sets (BEIR SciFact and QMSum) for
// tests of the evaluator packages.
//
// The folder holding scifact/ and qmsum/ is RAGOPS_DATASETS when set, else shared/datasets
// beside the repository root (the layout of the development machines and CI). When the data
// set is missing the test fails if RAGOPS_REQUIRE_ALL=1, and is skipped otherwise.
package datasets

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the folder of the named data set ("scifact", "qmsum"), or ends the test.
func Dir(t testing.TB, name string) string {
	t.Helper()
	base := os.Getenv("RAGOPS_DATASETS")
	if base == "" {
		base = filepath.Join(repoRoot(t), "..", "shared", "datasets")
	}
	dir := filepath.Join(base, name)
	if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl")); err != nil {
		msg := "data set " + name + " not found at " + dir +
			" (set RAGOPS_DATASETS to the folder holding scifact/ and qmsum/; CI has them in shared/datasets beside the clone)"
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's working directory")
		}
		dir = parent
	}
}
