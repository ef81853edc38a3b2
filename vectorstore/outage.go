package vectorstore

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultOutageWait is how long workers (build and sync shards) wait out an unavailable
// Weaviate by default: long enough for a restart, a rolling restart of a small cluster or a
// Raft leader election.
const DefaultOutageWait = 5 * time.Minute

// OutagePolicy makes a Store wait out an unavailable Weaviate for a bounded time instead of
// failing after [Config.Retry]'s few attempts. It is meant for workers, whose calls may take
// minutes; controllers keep short deadlines and let their work queue back off.
//
// Every call that fails with a [*RetryableError] (connection refused, timeout, 5xx/429,
// gRPC Unavailable, "leader not found", ...) is repeated with exponential backoff (Initial
// doubling, at most Cap, 10% jitter) until it succeeds, fails with a permanent error (which is
// returned at once), the context ends, or Wait has passed since its first failure (then the
// last retryable error is returned).
type OutagePolicy struct {
	// Wait bounds how long one call keeps retrying, from its first failure; 0 disables the
	// policy (Config.Retry applies).
	Wait time.Duration
	// Initial is the first delay (default 500 ms); Cap the largest (default 15 s).
	Initial, Cap time.Duration
	// Log receives a line when a call starts waiting, every LogEvery while it waits (default
	// 10 s) and when it recovers; nil logs nothing.
	Log *slog.Logger
	// LogEvery is the interval of the waiting lines.
	LogEvery time.Duration
}

func (p OutagePolicy) withDefaults() OutagePolicy {
	if p.Initial <= 0 {
		p.Initial = 500 * time.Millisecond
	}
	if p.Cap <= 0 {
		p.Cap = 15 * time.Second
	}
	if p.LogEvery <= 0 {
		p.LogEvery = 10 * time.Second
	}
	return p
}

// rideOutage runs fn under the outage policy (see [OutagePolicy]).
func (s *Store) rideOutage(ctx context.Context, fn func() error) error {
	p := s.cfg.Outage.withDefaults()
	b := wait.Backoff{Duration: p.Initial, Factor: 2, Jitter: 0.1, Steps: int(^uint(0) >> 1), Cap: p.Cap}
	var first, lastLog time.Time
	attempts := 0
	for {
		err := fn()
		attempts++
		if err == nil || !IsRetryable(err) {
			if err == nil && !first.IsZero() && p.Log != nil {
				p.Log.Info("weaviate available again", "waited", time.Since(first).Round(time.Millisecond).String(), "attempts", attempts)
			}
			return err
		}
		now := time.Now()
		if first.IsZero() {
			first, lastLog = now, now
			if p.Log != nil {
				p.Log.Warn("weaviate unavailable: waiting", "for", p.Wait.String(), "error", err.Error())
			}
		} else if p.Log != nil && now.Sub(lastLog) >= p.LogEvery {
			lastLog = now
			p.Log.Warn("weaviate still unavailable: waiting", "waited", now.Sub(first).Round(time.Second).String(),
				"left", (p.Wait - now.Sub(first)).Round(time.Second).String(), "attempts", attempts, "error", err.Error())
		}
		left := p.Wait - now.Sub(first)
		if left <= 0 {
			if p.Log != nil {
				p.Log.Error("weaviate unavailable for longer than the outage wait: giving up", "waited", now.Sub(first).Round(time.Second).String(), "attempts", attempts)
			}
			return err
		}
		d := min(b.Step(), left)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
	}
}
