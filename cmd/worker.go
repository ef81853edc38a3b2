package cmd

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
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
func runWorker[R any](w *workerFlags, fn func(ctx context.Context, log *slog.Logger) (R, error), withError func(*R, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// Spans go to the OTLP endpoint the manager forwarded, under the reconcile that made the Job.
	shutdown, terr := tracing.Setup(ctx, "ragops-worker")
	if terr != nil {
		log.Warn("tracing off", "error", terr)
	}
	defer flushTraces(shutdown, log)
	res, err := fn(tracing.FromEnv(ctx), log)
	if err != nil {
		withError(&res, err)
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

// flushTraces exports the spans still queued before the process exits, waiting at most 10 s.
func flushTraces(shutdown func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		log.Warn("traces not exported", "error", err)
	}
}
