package build

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Fault injection: Weaviate is SIGKILLed during an incremental sync (after the sync's first
// replaced chunks are in) and restarted on its data folder 10 s later. The sync waits the
// outage out and does not fail; the collection ends with exactly the chunks of a clean build of
// the new corpus, each once, and the shard's reported chunk count (what the controller
// compares with the collection) equals the collection's count.
func TestWeaviateRestartedDuringSyncCountsExact(t *testing.T) {
	const n = 40
	f := newFixture(t, n)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := Run(ctx, quiet, f.plan, Options{}); err != nil {
		t.Fatal(err)
	}
	before, err := f.store.Count(ctx, f.plan.Collection)
	if err != nil {
		t.Fatal(err)
	}
	// The new corpus: every document grows by a paragraph (more chunks), one is removed and
	// one added.
	for i := range n {
		b, err := os.ReadFile(filepath.Join(f.dir, docName(i)))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, f.dir, i, string(b)+"\n\nAanvulling: de raad stelt de begroting voor het jaar vast en neemt de motie over de sporthal aan na een lang debat.")
	}
	if err := os.Remove(filepath.Join(f.dir, docName(3))); err != nil {
		t.Fatal(err)
	}
	writeDoc(t, f.dir, n, "# Besluit nieuw\n\nEen nieuw besluit over de haven.")
	clean := f.plan
	clean.Collection += "_clean"
	if _, err := Run(ctx, quiet, clean, Options{}); err != nil {
		t.Fatal(err)
	}
	want := f.objectsOf(t, clean.Collection)

	sync := f.plan
	sync.Incremental = true
	ended := make(chan error, 1)
	var shardChunks int64 = -1
	go func() {
		res, err := Run(ctx, quiet, sync, Options{})
		if res.ShardChunks != nil {
			shardChunks = *res.ShardChunks
		}
		ended <- err
	}()
	var at int
	for at == 0 {
		select {
		case err := <-ended:
			t.Fatalf("the sync ended (%v) before Weaviate could be killed", err)
		case <-time.After(20 * time.Millisecond):
		}
		if c, err := f.store.Count(ctx, f.plan.Collection); err == nil && c > before {
			at = c
		}
	}
	if err := f.wv.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case err := <-ended:
		t.Fatalf("the sync ended (%v) while Weaviate was down", err)
	case <-time.After(10 * time.Second):
	}
	if err := f.wv.Restart(ctx, 0); err != nil {
		t.Fatalf("restart weaviate on its data folder: %v", err)
	}
	down := time.Since(killed)
	if err := <-ended; err != nil {
		t.Fatalf("the sync failed across a %s outage: %v", down.Round(time.Second), err)
	}
	got := f.objectsOf(t, f.plan.Collection)
	assertSame(t, "after the sync across the restart", got, want)
	count, err := f.store.Count(ctx, f.plan.Collection)
	if err != nil || int64(count) != shardChunks || count != len(want) {
		t.Fatalf("collection holds %d chunks (%v), the shard reported %d, a clean build has %d", count, err, shardChunks, len(want))
	}
	t.Logf("%d chunks before the sync; killed Weaviate at %d, down %s; the sync ended with %d chunks = shard report %d = clean build %d",
		before, at, down.Round(time.Millisecond), count, shardChunks, len(want))
}
