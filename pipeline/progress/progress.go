// Package progress logs a worker's done/total, rate and ETA at a steady interval.
package progress

import (
	"fmt"
	"log/slog"
	"time"
)

// Logger logs progress of one phase of a worker (documents embedded, queries run).
type Logger struct {
	log   *slog.Logger
	what  string
	total int64
	start time.Time
	every time.Duration
	last  time.Time
}

// New returns a Logger for total items that logs at most once per every.
func New(log *slog.Logger, what string, total int64, every time.Duration) *Logger {
	now := time.Now()
	return &Logger{log: log, what: what, total: total, start: now, last: now, every: every}
}

// Tick logs done items when the interval has passed (or force is set), with attrs appended.
func (p *Logger) Tick(done int64, force bool, attrs ...any) {
	now := time.Now()
	if !force && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	el := now.Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	eta := "unknown"
	if rate > 0 && p.total >= done {
		eta = (time.Duration(float64(p.total-done)/rate) * time.Second).Round(time.Second).String()
	}
	args := append([]any{"done", done, "total", p.total, "rate_per_s", fmt.Sprintf("%.1f", rate), "eta", eta}, attrs...)
	p.log.Info(p.what, args...)
}
