package cmd

import (
	"context"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/evaluate"
)

func newEvaluateCommand() *cobra.Command {
	var (
		w      workerFlags
		lib    string
		outDir string
	)
	c := &cobra.Command{
		Use:   "evaluate",
		Short: "Run a BEIR data set's queries against a revision and compute recall@k, nDCG@k, MRR@k (an Evaluation Job)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runWorker(&w, func(ctx context.Context, log *slog.Logger) (plan.EvaluateResult, error) {
				var p plan.Evaluate
				if err := plan.Read(w.planPath, &p); err != nil {
					return plan.EvaluateResult{}, err
				}
				return evaluate.Run(ctx, log, p, evaluate.Options{LibraryPath: lib, OutDir: outDir, Frames: os.Stdout})
			}, func(r *plan.EvaluateResult, err error) { r.Error = err.Error() })
		},
	}
	w.bind(c)
	c.Flags().StringVar(&lib, "onnxruntime-lib", "", "ONNX Runtime shared library (default $RAGOPS_ONNXRUNTIME_LIB)")
	c.Flags().StringVar(&outDir, "out", "/tmp/evaluation", "folder for the TREC run file, per-query metrics and results, and the summary")
	return c
}
