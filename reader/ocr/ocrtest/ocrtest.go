// Package ocrtest gives tests a Tesseract engine: they skip when Tesseract (with nld and
// eng) is not installed, and fail when RAGOPS_REQUIRE_ALL=1 (CI, after
// hack/prepare.d/tesseract.sh installed it).
package ocrtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ragops/ragops/reader/ocr"
)

// Require skips (or, under RAGOPS_REQUIRE_ALL=1, fails) t unless Tesseract 5 with the nld
// and eng models is installed.
func Require(t testing.TB) {
	t.Helper()
	bin := ocr.Options{}.WithDefaults().Binary
	out, err := exec.Command(bin, "--list-langs").CombinedOutput()
	if err == nil && strings.Contains(string(out), "\nnld") && strings.Contains(string(out), "\neng") {
		return
	}
	msg := "Tesseract with nld and eng not installed (hack/prepare.d/tesseract.sh)"
	if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Engine returns an engine with opts (Mode Auto when unset), after Require.
func Engine(t testing.TB, opts ocr.Options) *ocr.Engine {
	t.Helper()
	Require(t)
	if opts.Mode == "" {
		opts.Mode = ocr.Auto
	}
	e, err := ocr.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
