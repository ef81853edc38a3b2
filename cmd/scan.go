package cmd

import (
	"context"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
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
				ctx, span := tracing.Start(ctx, "scan")
				res, err := scan.RunAfter(ctx, log, p.Source, p.Previous, os.TempDir())
				span.SetAttributes(attribute.Int64("ragops.documents", res.Documents), attribute.Int64("ragops.bytes", res.Bytes),
					attribute.String("ragops.corpus_revision", res.Revision))
				tracing.End(span, err)
				return res, err
			}, func(r *plan.ScanResult, err error) { r.Error = err.Error() })
		},
	}
	w.bind(c)
	return c
}
