package packaging

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// root is the repository root.
var root = testenv.ModuleRoot()

func repoPath(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }

// need skips the test (or fails it under RAGOPS_REQUIRE_ALL=1) with a message naming what
// prepares the missing part.
func need(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

var (
	cpOnce sync.Once
	cp     *testenv.Env
	cpErr  error

	wvOnce sync.Once
	wv     *weaviatetest.Server
	wvErr  error

	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		_ = cp.Stop()
	}
	if wv != nil {
		_ = wv.Stop()
	}
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// controlPlane returns the shared envtest control plane (etcd + kube-apiserver with the CRDs).
func controlPlane(t *testing.T) *testenv.Env {
	t.Helper()
	cpOnce.Do(func() { cp, cpErr = testenv.Start() })
	if errors.Is(cpErr, testenv.ErrNoAssets) {
		need(t, cpErr.Error())
	}
	if cpErr != nil {
		t.Fatal(cpErr)
	}
	return cp
}

// weaviate returns the shared real Weaviate server.
func weaviate(t *testing.T) *weaviatetest.Server {
	t.Helper()
	bin, err := weaviatetest.BinaryPath()
	if err != nil {
		need(t, err.Error())
	}
	wvOnce.Do(func() { wv, wvErr = weaviatetest.Launch(context.Background(), weaviatetest.Options{Binary: bin}) })
	if wvErr != nil {
		t.Fatal(wvErr)
	}
	return wv
}

// ragopsBinary builds the ragops binary once, the way the Dockerfile's build stage does
// (cgo on, -trimpath), and returns its path.
func ragopsBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "ragops-packaging-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ragops")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, ".")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// readLines reads a file's lines.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}
