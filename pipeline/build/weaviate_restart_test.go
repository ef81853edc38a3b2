package build

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ragops/ragops/internal/plan"
)

// Fault injection: Weaviate is SIGKILLed mid-build (after the first chunks are in) and started
// again on the same data folder and ports. The build either rides the outage out on its write
// back-off or fails with an error, and then its retry (what the Job's retry or the
// ragops.dev/retry annotation does) finishes it. Either way the collection ends with exactly the
// chunks of a clean build of the same plan, each once.
func TestWeaviateRestartedMidBuildEqualsACleanBuild(t *testing.T) {
	f := newFixture(t, 160)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clean := f.plan
	clean.Collection += "_clean"
	if _, err := Run(ctx, quiet, clean, Options{}); err != nil {
		t.Fatal(err)
	}
	want := f.objectsOf(t, clean.Collection)

	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	type outcome struct {
		res plan.BuildResult
		err error
	}
	ended := make(chan outcome, 1)
	go func() {
		res, err := Run(runCtx, quiet, f.plan, Options{})
		ended <- outcome{res, err}
	}()
	var at int
	for at == 0 {
		select {
		case o := <-ended:
			t.Fatalf("the build ended (%v) before Weaviate could be killed", o.err)
		case <-time.After(20 * time.Millisecond):
		}
		if n, err := f.store.Count(ctx, f.plan.Collection); err == nil && n > 0 {
			at = n
		}
	}
	if err := f.wv.Kill(); err != nil {
		t.Fatal(err)
	}
	if at >= len(want) {
		t.Fatalf("%d of %d chunks were written before the kill: no fault happened mid-build", at, len(want))
	}
	killed := time.Now()
	if err := f.wv.Restart(ctx, 0); err != nil {
		t.Fatalf("restart weaviate on its data folder: %v", err)
	}
	back := time.Since(killed)
	first := <-ended
	// The clean build's chunks survived the kill too (the restart replayed the data folder).
	assertSame(t, "clean collection after the restart", f.objectsOf(t, clean.Collection), want)
	how := "rode the outage out"
	if first.err != nil {
		how = "failed (" + first.err.Error() + ") and was retried"
		if _, err := Run(ctx, quiet, f.plan, Options{}); err != nil {
			t.Fatalf("retried build after the restart: %v", err)
		}
	}
	got := f.objectsOf(t, f.plan.Collection)
	assertSame(t, "after the Weaviate restart", got, want)
	t.Logf("killed Weaviate with %d of %d chunks written; ready again after %s; the build %s and left %d chunks, each once",
		at, len(want), back.Round(time.Millisecond), how, len(got))
}
