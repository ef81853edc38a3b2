package cmd

import (
	"context"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/scan"
)

func newScanCommand() *cobra.Command {
	var w workerFlags
	c := &cobra.Command{
		Use:   "scan",
		Short: "List a corpus source: documents, bytes and content revision (a Corpus Job)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runWorker(&w, func(ctx context.Context, log *slog.Logger) (plan.ScanResult, error) {
				var p plan.Scan
				if err := plan.Read(w.planPath, &p); err != nil {
					return plan.ScanResult{}, err
				}
				return scan.RunAfter(ctx, log, p.Source, p.Previous, os.TempDir())
			}, func(r *plan.ScanResult, err error) { r.Error = err.Error() })
		},
	}
	w.bind(c)
	return c
}
