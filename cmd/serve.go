package cmd

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/serving"
)

func newServeCommand() *cobra.Command {
	var (
		cfg       serving.Config
		addr      string
		device    string
		precision string
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a model folder's query and document embeddings (Weaviate text2vec-transformers and OpenAI embeddings APIs)",
		Long: `serve loads a model folder (model.onnx, tokenizer.json, ragops.json) and embeds texts exactly as
the build and Evaluation Jobs do (same tokenizer, prefixes, pooling and normalisation), over
Weaviate's text2vec-transformers inference API (POST /vectors, GET /meta, /.well-known/live,
/.well-known/ready) and OpenAI's embeddings API (POST /v1/embeddings). Concurrent requests are
micro-batched; a full queue answers 429. Prometheus metrics are at /metrics. SIGTERM drains:
readiness turns 503, in-flight requests complete, then the process exits.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			shutdown, err := tracing.Setup(ctx, "ragops-model-server")
			if err != nil {
				return err
			}
			defer flushTraces(shutdown, log)
			cfg.Embedder.Device = embedder.Device(device)
			cfg.Embedder.Precision = embedder.Precision(precision)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			return serving.Run(ctx, ln, cfg, log)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.ModelDir, "model-dir", "", "model folder (model.onnx, tokenizer.json, ragops.json)")
	f.StringVar(&addr, "listen", ":8080", "address of the HTTP API and /metrics")
	f.StringVar(&cfg.Embedder.LibraryPath, "onnxruntime-lib", "", "ONNX Runtime shared library (default $RAGOPS_ONNXRUNTIME_LIB)")
	f.StringVar(&device, "device", string(embedder.CPU), "cpu or cuda")
	f.StringVar(&precision, "precision", string(embedder.FP32), "fp32 or fp16 (a variant named in ragops.json)")
	f.IntVar(&cfg.Embedder.IntraOpThreads, "threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	f.IntVar(&cfg.Embedder.BatchTokens, "ort-batch-tokens", 0, "padded tokens per ONNX Runtime batch (0: the device's default)")
	f.DurationVar(&cfg.Options.BatchWindow, "batch-window", 0, "longest a batch waits, when nothing else is queued, for requests received and being tokenized (0: 3ms)")
	f.IntVar(&cfg.Options.MaxBatchTexts, "max-batch-texts", 0, "texts per batch (0: 64)")
	f.IntVar(&cfg.Options.MaxBatchTokens, "max-batch-tokens", 0, "tokens per batch (0: 8192)")
	f.IntVar(&cfg.Options.QueueSize, "queue-size", 0, "texts that may wait for a batch before requests get 429 (0: 256)")
	f.Int64Var(&cfg.Options.MaxRequestBytes, "max-request-bytes", 0, "request body limit, 413 beyond (0: 1 MiB)")
	f.IntVar(&cfg.Options.WeaviateReserve, "weaviate-reserve", 0, "places of the queue only Weaviate's /query and /passage paths may take (0: a quarter of the queue)")
	f.IntVar(&cfg.Options.MaxInputs, "max-inputs", 0, "texts per /v1/embeddings request, 413 beyond (0: the queue size less Weaviate's reserve)")
	f.IntVar(&cfg.Options.Workers, "workers", 0, "batches run at once (0: 1)")
	f.DurationVar(&cfg.DrainDelay, "drain-delay", 0, "after SIGTERM, how long to keep serving with readiness 503 before closing the listener")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", 0, "how long reading one request, headers and body, may take (0: 30s)")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "how long an idle keep-alive connection is kept (0: 2m)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 0, "after the listener closes, how long in-flight requests may take (0: 30s)")
	_ = c.MarkFlagRequired("model-dir")
	return c
}
