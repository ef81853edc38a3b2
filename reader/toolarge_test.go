package reader_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// Issue 56: a document over the Mux's limit is TooLarge with a reason that names its size
// and the limit, each in bytes and MiB, so a person can tell how far to raise the limit.
func TestTooLargeNamesSizeAndLimit(t *testing.T) {
	const limit = 3 << 20
	data := []byte(strings.Repeat("woord ", limit/6+1))
	_, err := reader.NewMux(limit, markup.Text{}).Read(context.Background(), data)
	if r, _ := reader.ReasonOf(err); r != reader.TooLarge {
		t.Fatalf("error %v, want TooLarge", err)
	}
	for _, want := range []string{"3145734 bytes (3.0 MiB)", "limit of 3145728 bytes (3.0 MiB)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("skip reason %q does not name %q", err, want)
		}
	}
}
