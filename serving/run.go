package serving

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ragops/ragops/embedder"
)

// Config is what Run serves.
type Config struct {
	// ModelDir is the model folder (model.onnx, tokenizer.json, ragops.json).
	ModelDir string
	// Embedder sets device, precision, threads and ONNX Runtime batching. On the CPU a zero
	// RunTokens becomes embedder.CPURunTokens: each batch of requests is cut into ONNX Runtime
	// runs by cost, so that one long query does not pad many short ones.
	Embedder embedder.Options
	// Options tunes batching and limits; ModelHash is filled in by Run.
	Options Options
	// DrainDelay is how long Run keeps serving after its context ends while readiness already
	// answers 503 (so that endpoints stop routing before the listener closes); default 0.
	DrainDelay time.Duration
	// ShutdownTimeout bounds the wait for in-flight requests once the listener is closed;
	// default 30 s.
	ShutdownTimeout time.Duration
	// ReadTimeout bounds reading a request, headers and body (default 30 s; its headers alone
	// get 10 s); IdleTimeout closes a keep-alive connection that sends no request (default 2
	// minutes). A client that opens connections and sends slowly or nothing holds none for
	// longer.
	ReadTimeout, IdleTimeout time.Duration
}

// Run serves cfg's model on ln until ctx ends, then drains: readiness turns 503, after
// DrainDelay the listener closes, in-flight and queued requests complete (up to
// ShutdownTimeout), the model is closed and Run returns nil. The listener accepts connections
// (live answers 204, ready 503) while the model loads and warms up.
//
// Errors: the model folder cannot be hashed or loaded, warm-up fails, the listener fails, or
// requests were still running at ShutdownTimeout.
func Run(ctx context.Context, ln net.Listener, cfg Config, log *slog.Logger) error {
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	start := time.Now()
	hash, err := embedder.FolderHash(cfg.ModelDir)
	if err != nil {
		ln.Close()
		return err
	}
	if cfg.Embedder.RunTokens == 0 && cfg.Embedder.Device != embedder.CUDA {
		cfg.Embedder.RunTokens = embedder.CPURunTokens
	}
	m, err := embedder.Load(cfg.ModelDir, cfg.Embedder)
	if err != nil {
		ln.Close()
		return err
	}
	defer m.Close()
	opts := cfg.Options
	opts.ModelHash = hash
	if opts.Precision == "" {
		opts.Precision = cfg.Embedder.Precision
	}
	s, err := New(m, opts)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: min(10*time.Second, cfg.ReadTimeout),
		ReadTimeout: cfg.ReadTimeout, IdleTimeout: cfg.IdleTimeout}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	if err := s.Warmup(ctx); err != nil && ctx.Err() == nil {
		srv.Close()
		s.Close()
		return err
	}
	meta := s.Meta()
	log.Info("serving", "addr", ln.Addr().String(), "model", meta.Model, "modelHash", meta.ModelHash,
		"dimensions", meta.Dimensions, "provider", meta.Provider, "startup", time.Since(start).Round(time.Millisecond))

	select {
	case <-ctx.Done():
	case err := <-served:
		s.Close()
		return fmt.Errorf("serving: %w", err)
	}
	s.Drain()
	log.Info("draining", "delay", cfg.DrainDelay)
	if cfg.DrainDelay > 0 {
		time.Sleep(cfg.DrainDelay)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	s.Close()
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	if shutErr != nil {
		return fmt.Errorf("serving: shutdown after %s: %w", cfg.ShutdownTimeout, shutErr)
	}
	log.Info("drained")
	return nil
}
