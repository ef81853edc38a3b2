package ort

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		v, min string
		want   bool
	}{{"1.24.3", "1.24", true}, {"1.31.1", "1.24", true}, {"1.23.2", "1.24", false}, {"2.0.0", "1.24", true}, {"1", "1.24", false}, {"x.y", "1.24", false}} {
		if got := atLeast(c.v, c.min); got != c.want {
			t.Errorf("atLeast(%q, %q) = %v, want %v", c.v, c.min, got, c.want)
		}
	}
}

// TestInit: a missing or bogus library gives an error naming the provisioning script; the
// real one (RAGOPS_ONNXRUNTIME_LIB) loads once, and a second, different path is refused.
func TestInit(t *testing.T) {
	err := Init(filepath.Join(t.TempDir(), "libonnxruntime.so"))
	if err == nil || !strings.Contains(err.Error(), "hack/provision-onnxruntime.sh") {
		t.Fatalf("missing library: err = %v, want a hint naming the script", err)
	}
	bogus := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(bogus, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Init(bogus); err == nil || !strings.Contains(err.Error(), "hack/provision-onnxruntime.sh") {
		t.Fatalf("bogus library: err = %v, want a hint naming the script", err)
	}
	lib := os.Getenv(EnvLibrary)
	if lib == "" {
		msg := EnvLibrary + " is not set: run hack/provision-onnxruntime.sh and set it to the path it prints"
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if err := Init(""); err != nil {
		t.Fatal(err)
	}
	if v := Version(); !atLeast(v, MinVersion) || Library() != lib {
		t.Errorf("Version() = %q, Library() = %q", v, Library())
	}
	if err := Init(lib); err != nil {
		t.Errorf("second Init with the same path: %v", err)
	}
	if err := Init(bogus); err == nil {
		t.Error("Init with a different path after a successful one was accepted")
	}
}
