// Package ort loads the ONNX Runtime shared library for github.com/yalue/onnxruntime_go
// (v1.27.0, ORT C API 24) once per process and checks its version.
//
// The library is provisioned by hack/provision-onnxruntime.sh (cpu: npm onnxruntime-node
// 1.24.3; cuda: the PyPI onnxruntime-gpu wheel). Its path is given explicitly (a flag) or
// through the environment variable RAGOPS_ONNXRUNTIME_LIB.
package ort

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	onnx "github.com/yalue/onnxruntime_go"
)

// EnvLibrary is the environment variable that names the ONNX Runtime shared library.
const EnvLibrary = "RAGOPS_ONNXRUNTIME_LIB"

// DefaultLibrary is where the ragops image (and the local demo's image folder) keeps the
// library; it is used when neither a path nor $RAGOPS_ONNXRUNTIME_LIB is given.
const DefaultLibrary = "/usr/local/lib/onnxruntime/libonnxruntime.so"

// MinVersion is the oldest ONNX Runtime release onnxruntime_go v1.27.0 works with.
const MinVersion = "1.24"

const howTo = "run hack/provision-onnxruntime.sh (cpu) or hack/provision-onnxruntime.sh cuda and set " +
	EnvLibrary + " (or the --onnxruntime-lib flag) to the path it prints"

var (
	mu       sync.Mutex
	loaded   string
	loadedOK bool
)

// Init loads the ONNX Runtime library at path, or at $RAGOPS_ONNXRUNTIME_LIB when path is
// empty, or at DefaultLibrary when that exists, and initialises the process-wide environment. Calling it again with the same path
// (or an empty one) is a no-op; a different path is an error, since one process holds one
// runtime. A missing file, a library that fails to load, or a version older than MinVersion
// gives one error that says how to get the right library.
func Init(path string) error {
	mu.Lock()
	defer mu.Unlock()
	if path == "" {
		path = os.Getenv(EnvLibrary)
	}
	if path == "" {
		if _, err := os.Stat(DefaultLibrary); err == nil {
			path = DefaultLibrary
		}
	}
	if loadedOK {
		if path != "" && path != loaded {
			return fmt.Errorf("onnxruntime: already initialised from %s, cannot switch to %s", loaded, path)
		}
		return nil
	}
	if path == "" {
		return fmt.Errorf("onnxruntime: no library given: %s", howTo)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("onnxruntime: library %s: %v: %s", path, err, howTo)
	}
	onnx.SetSharedLibraryPath(path)
	if err := onnx.InitializeEnvironment(onnx.WithLogLevelError()); err != nil {
		return fmt.Errorf("onnxruntime: cannot initialise %s (%v); ONNX Runtime >= %s is needed: %s", path, err, MinVersion, howTo)
	}
	v := onnx.GetVersion()
	if !atLeast(v, MinVersion) {
		_ = onnx.DestroyEnvironment()
		return fmt.Errorf("onnxruntime: %s is version %s, need >= %s: %s", path, v, MinVersion, howTo)
	}
	loaded, loadedOK = path, true
	return nil
}

// Version returns the loaded runtime's version string, or "" before Init succeeded.
func Version() string {
	mu.Lock()
	defer mu.Unlock()
	if !loadedOK {
		return ""
	}
	return onnx.GetVersion()
}

// Library returns the path Init loaded, or "".
func Library() string {
	mu.Lock()
	defer mu.Unlock()
	return loaded
}

// atLeast compares dotted numeric versions ("1.24.3" >= "1.24").
func atLeast(v, minimum string) bool {
	a, b := strings.Split(v, "."), strings.Split(minimum, ".")
	for i := range b {
		if i >= len(a) {
			return false
		}
		x, err1 := strconv.Atoi(a[i])
		y, err2 := strconv.Atoi(b[i])
		if err1 != nil || err2 != nil {
			return false
		}
		if x != y {
			return x > y
		}
	}
	return true
}
