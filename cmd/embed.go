package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/pipeline/vectorcopy"
	"github.com/ragops/ragops/vectorstore"
)

func newEmbedCommand() *cobra.Command {
	var (
		w      workerFlags
		lib    string
		shard  int
		device string
		outage time.Duration
	)
	c := &cobra.Command{
		Use:   "embed",
		Short: "Chunk, embed and write one shard of a corpus into a revision collection (an Index Job)",
		Long: `embed reads the build plan written by the Index controller, takes the documents of its
shard (JOB_COMPLETION_INDEX of the Indexed Job), chunks them with the strategy, embeds the chunks
naively or with late chunking, and batch-writes them into the revision's Weaviate collection.
The result (documents, chunks, tokens, skipped by reason) is written to the termination log.
A plan with "copy" set instead fills the collection from another revision's collection (same
chunks and vectors, another vector index or layout): nothing is read or embedded.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runWorker(&w, func(ctx context.Context, log *slog.Logger) (plan.BuildResult, error) {
				var p plan.Build
				if err := plan.Read(w.planPath, &p); err != nil {
					return plan.BuildResult{}, err
				}
				if shard < 0 {
					shard = 0
					if v := os.Getenv(plan.EnvShard); v != "" {
						n, err := strconv.Atoi(v)
						if err != nil {
							return plan.BuildResult{}, fmt.Errorf("%s=%q is not a shard number", plan.EnvShard, v)
						}
						shard = n
					}
				}
				if device != "" {
					p.Embedder.Device = ragopsv1alpha1.Device(device)
				}
				if p.OutageSeconds > 0 {
					outage = time.Duration(p.OutageSeconds) * time.Second
				}
				if p.Copy != nil {
					// A storage-only revision: filled from the kept revision's objects.
					return vectorcopy.Run(ctx, log, p, vectorcopy.Options{OutageWait: outage})
				}
				return build.Run(ctx, log, p, build.Options{Shard: shard, LibraryPath: lib, ProgressEvery: w.progressEvery, OutageWait: outage})
			}, func(r *plan.BuildResult, err error) { r.Error, r.Reason = err.Error(), plan.ReasonOf(err) })
		},
	}
	w.bind(c)
	f := c.Flags()
	f.StringVar(&lib, "onnxruntime-lib", "", "ONNX Runtime shared library (default $RAGOPS_ONNXRUNTIME_LIB)")
	f.IntVar(&shard, "shard", -1, "shard to embed (default $JOB_COMPLETION_INDEX, else 0)")
	f.StringVar(&device, "device", "", "override the plan's device (cpu or cuda)")
	f.DurationVar(&outage, "weaviate-outage-wait", vectorstore.DefaultOutageWait, "how long each Weaviate call waits out an unavailable server before the shard fails (the plan's outageSeconds wins; negative: a few seconds)")
	return c
}
