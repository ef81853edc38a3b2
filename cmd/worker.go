package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/internal/plan"
)

// workerFlags are shared by the Job subcommands.
type workerFlags struct {
	planPath        string
	terminationPath string
	progressEvery   time.Duration
}

func (w *workerFlags) bind(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&w.planPath, "plan", "", "plan JSON written by the controller (default "+plan.Dir+"/"+plan.File+")")
	f.StringVar(&w.terminationPath, "termination-log", plan.TerminationLog, "where the JSON result is written (the container's terminationMessagePath)")
	f.DurationVar(&w.progressEvery, "progress-interval", 10*time.Second, "how often progress is logged")
}

// runWorker runs fn with a context cancelled by SIGTERM/SIGINT, writes its result to the
// termination log and turns a failure into a non-zero exit with the error in the result.
func runWorker[R any](w *workerFlags, fn func(ctx context.Context, log *slog.Logger) (R, error), withError func(*R, string)) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	res, err := fn(ctx, log)
	if err != nil {
		withError(&res, err.Error())
	}
	if werr := plan.WriteResult(w.terminationPath, res); werr != nil {
		log.Error("cannot write result", "path", w.terminationPath, "error", werr)
		if err == nil {
			err = werr
		}
	}
	if err != nil {
		log.Error("failed", "error", err)
		return err
	}
	return nil
}

// progress logs done/total, rate and ETA at a steady interval.
type progress struct {
	log   *slog.Logger
	what  string
	total int64
	start time.Time
	every time.Duration
	last  time.Time
}

func newProgress(log *slog.Logger, what string, total int64, every time.Duration) *progress {
	now := time.Now()
	return &progress{log: log, what: what, total: total, start: now, last: now, every: every}
}

// tick logs when the interval has passed (or force is set).
func (p *progress) tick(done int64, force bool, attrs ...any) {
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
