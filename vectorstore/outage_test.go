package vectorstore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// lockedBuffer is a log sink safe for the store's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker's store waits out a Weaviate that is down (SIGKILLed, restarted on its data folder
// 12 s later): an upsert issued while it is down succeeds once it is back, logging the wait;
// with a bound shorter than the outage it fails with a *RetryableError after about the bound;
// a permanent error (a missing collection) fails at once even under the policy.
func TestOutagePolicyWaitsOutARestart(t *testing.T) {
	srv := weaviatetest.Start(t)
	ctx := context.Background()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := storeFor(t, srv, Config{Outage: OutagePolicy{Wait: 2 * time.Minute, Initial: 200 * time.Millisecond, Cap: 2 * time.Second, Log: log, LogEvery: 3 * time.Second}})
	short := storeFor(t, srv, Config{Outage: OutagePolicy{Wait: 2 * time.Second, Initial: 200 * time.Millisecond}})
	const name = "OutageT"
	if err := s.EnsureCollection(ctx, CollectionSpec{Name: name, Revision: "r1", Dimensions: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := short.Collection(ctx, name); err != nil { // cached: the upsert goes straight to the batch call
		t.Fatal(err)
	}
	chunk := func(doc string) []Chunk {
		return []Chunk{{DocID: doc, End: 1, Text: doc, Vector: []float32{1, 0, 0, 0}}}
	}
	if err := s.Upsert(ctx, name, chunk("before.md")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Count(ctx, "OutageMissing"); err == nil || IsRetryable(err) {
		t.Fatalf("count of a missing collection under the outage policy: %v, want a permanent error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a permanent error took %s, want it at once", took)
	}

	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	start = time.Now()
	err := short.Upsert(ctx, name, chunk("short.md"))
	shortTook := time.Since(start)
	if !IsRetryable(err) {
		t.Fatalf("upsert with a 2 s bound while Weaviate is down: %v, want a *RetryableError", err)
	}
	if shortTook < 2*time.Second || shortTook > 30*time.Second {
		t.Errorf("the 2 s bound gave up after %s", shortTook)
	}
	done := make(chan error, 1)
	go func() { done <- s.Upsert(ctx, name, chunk("during.md")) }()
	time.Sleep(12*time.Second - time.Since(killed))
	select {
	case err := <-done:
		t.Fatalf("the upsert returned (%v) while Weaviate was down", err)
	default:
	}
	if err := srv.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("upsert across the outage: %v", err)
	}
	down := time.Since(killed)
	n, err := s.Count(ctx, name)
	if err != nil || n != 2 {
		t.Fatalf("count after the outage: %d (%v), want 2 (before.md and during.md)", n, err)
	}
	out := logs.String()
	for _, want := range []string{"weaviate unavailable: waiting", "weaviate still unavailable: waiting", "weaviate available again"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	t.Logf("the 2 s bound gave up after %s; the upsert waited out %s down and wrote", shortTook.Round(time.Millisecond), down.Round(time.Millisecond))
}
