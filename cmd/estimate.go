package cmd

import (
	"context"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/estimate"
)

func newEstimateCommand() *cobra.Command {
	var w workerFlags
	var lib string
	c := &cobra.Command{
		Use:   "estimate",
		Short: "Estimate the tokens of an Experiment's trials on a seeded sample of the corpus (an Experiment Job)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runWorker(&w, func(ctx context.Context, log *slog.Logger) (plan.EstimateResult, error) {
				var p plan.Estimate
				if err := plan.Read(w.planPath, &p); err != nil {
					return plan.EstimateResult{}, err
				}
				return estimate.Run(ctx, log, p, estimate.Options{LibraryPath: lib, WorkDir: os.TempDir()})
			}, func(r *plan.EstimateResult, err error) { r.Error = err.Error() })
		},
	}
	w.bind(c)
	c.Flags().StringVar(&lib, "onnxruntime-lib", "", "ONNX Runtime shared library, for Semantic and Cluster strategies (default $RAGOPS_ONNXRUNTIME_LIB)")
	return c
}
