package build

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// Fault injection: Weaviate is SIGKILLed mid-build (after the first chunks are in) and started
// again on the same data folder and ports, either after 30 seconds down (the build waits the
// outage out: it must not fail) or only after the build gave up with an error because its
// outage wait (2 s here) ran out (then the build runs again, as the Job's retry or the
// ragops.dev/retry annotation does, and resumes). Either way the collection ends with exactly
// the chunks of a clean build of the same plan, each once, and the clean collection written
// before the kill is intact.
func TestWeaviateRestartedMidBuildEqualsACleanBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		// afterFailure restarts Weaviate only once the build has returned its error.
		afterFailure bool
		down         time.Duration
	}{{"down 30s", false, 30 * time.Second}, {"restarted after the build failed", true, 0}} {
		t.Run(tc.name, func(t *testing.T) { weaviateRestartedMidBuild(t, tc.afterFailure, tc.down) })
	}
}

func weaviateRestartedMidBuild(t *testing.T, afterFailure bool, down time.Duration) {
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
	ended := make(chan error, 1)
	opts := Options{}
	if afterFailure {
		opts.OutageWait = 2 * time.Second
	}
	go func() {
		_, err := Run(runCtx, quiet, f.plan, opts)
		ended <- err
	}()
	var at int
	for at == 0 {
		select {
		case err := <-ended:
			t.Fatalf("the build ended (%v) before Weaviate could be killed", err)
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
	var first error
	if afterFailure {
		if first = <-ended; first == nil {
			t.Fatal("the build succeeded while Weaviate was down")
		}
	} else {
		select {
		case err := <-ended:
			t.Fatalf("the build ended (%v) while Weaviate was down, within %s", err, down)
		case <-time.After(down):
		}
	}
	if err := f.wv.Restart(ctx, 0); err != nil {
		t.Fatalf("restart weaviate on its data folder: %v", err)
	}
	wasDown := time.Since(killed)
	ready := time.Now()
	if !afterFailure {
		if first = <-ended; first != nil {
			t.Fatalf("the build failed across a %s outage: %v", down, first)
		}
	}
	assertSame(t, "clean collection after the restart", f.objectsOf(t, clean.Collection), want)
	how := "rode the outage out"
	if first != nil {
		how = "failed (" + first.Error() + ") and was retried"
		if _, err := Run(ctx, quiet, f.plan, Options{}); err != nil {
			t.Fatalf("retried build after the restart: %v", err)
		}
	}
	done := time.Since(ready)
	got := f.objectsOf(t, f.plan.Collection)
	assertSame(t, "after the Weaviate restart", got, want)
	t.Logf("killed Weaviate with %d of %d chunks written; ready again %s after the kill; the build %s, was done %s after the restart and left %d chunks, each once",
		at, len(want), wasDown.Round(time.Millisecond), how, done.Round(time.Millisecond), len(got))
}
