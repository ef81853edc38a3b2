package vectorstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate"
	wgrpc "github.com/weaviate/weaviate-go-client/v5/weaviate/grpc"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Config says how to reach Weaviate. HTTPHost and GRPCHost are required.
type Config struct {
	// HTTPHost is the REST endpoint as host:port, e.g. "127.0.0.1:8080".
	HTTPHost string
	// GRPCHost is the gRPC endpoint as host:port, e.g. "127.0.0.1:50051".
	GRPCHost string
	// Scheme is "http" (default) or "https"; https also secures gRPC (see CABundle).
	Scheme string
	// APIKey, when set, is sent as "Authorization: Bearer <key>" on REST and gRPC calls.
	APIKey string
	// CABundle is a PEM bundle of the CAs trusted for https (REST and gRPC) instead of the
	// system roots. With https the server certificate is always verified, on gRPC too.
	CABundle []byte
	// Timeout bounds each request; default 60 s.
	Timeout time.Duration
	// BatchSize is the number of chunks per gRPC batch request; default 256.
	BatchSize int
	// Concurrency is the number of batch requests in flight during one Upsert; default 2.
	Concurrency int
	// WriteConsistency is how many replicas of a shard must acknowledge each write and delete:
	// ConsistencyOne, ConsistencyQuorum or ConsistencyAll; empty leaves Weaviate's default
	// (QUORUM).
	WriteConsistency string
	// ReadConsistency is how many replicas of a shard must answer each search (results are
	// merged and stale replicas repaired): ConsistencyOne, ConsistencyQuorum or
	// ConsistencyAll; empty leaves Weaviate's default.
	ReadConsistency string
	// Retry is the backoff for retryable failures (see [IsRetryable]); Steps is the number of
	// attempts. Default: 6 attempts, 250 ms doubling to at most 8 s, 10% jitter.
	Retry wait.Backoff
	// Outage, when its Wait is set, replaces Retry with a bounded wait for an unavailable
	// server (workers only; see [OutagePolicy]).
	Outage OutagePolicy
}

// Environment variables read by [ConfigFromEnv]; hack/weaviate.sh env prints the first two.
const (
	EnvHTTPHost = "RAGOPS_WEAVIATE_HTTP_HOST"
	EnvGRPCHost = "RAGOPS_WEAVIATE_GRPC_HOST"
	EnvAPIKey   = "RAGOPS_WEAVIATE_API_KEY"
)

// ConfigFromEnv returns a Config with HTTPHost, GRPCHost and APIKey from RAGOPS_WEAVIATE_HTTP_HOST,
// RAGOPS_WEAVIATE_GRPC_HOST and RAGOPS_WEAVIATE_API_KEY (optional), other fields zero (defaults).
//
// Errors: a required variable is unset, naming it.
func ConfigFromEnv() (Config, error) {
	cfg := Config{HTTPHost: os.Getenv(EnvHTTPHost), GRPCHost: os.Getenv(EnvGRPCHost), APIKey: os.Getenv(EnvAPIKey)}
	for name, v := range map[string]string{EnvHTTPHost: cfg.HTTPHost, EnvGRPCHost: cfg.GRPCHost} {
		if v == "" {
			return Config{}, fmt.Errorf("vectorstore: %s is not set (want host:port; hack/weaviate.sh env prints it for a local server)", name)
		}
	}
	return cfg, nil
}

// Consistency levels of replicated reads and writes (Weaviate's tunable consistency): one
// replica, a majority (factor/2 + 1), or all replicas of a shard.
const (
	ConsistencyOne    = "ONE"
	ConsistencyQuorum = "QUORUM"
	ConsistencyAll    = "ALL"
)

// DefaultRetry is the backoff used when Config.Retry is zero.
var DefaultRetry = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 6, Cap: 8 * time.Second}

// Store reads and writes ragops chunk collections in one Weaviate server. It is safe for
// concurrent use.
type Store struct {
	client *weaviate.Client
	// search carries Search (searchconn.go): the client's own connection caps replies at 4 MiB.
	search *grpc.ClientConn
	cfg    Config

	mu    sync.Mutex
	infos map[string]CollectionInfo // collection name -> recorded settings

	requests struct{ upserts, deletes atomic.Int64 }
}

// Requests counts the write requests a Store sent: batch upserts and batch deletes, each
// try of a retried request included.
type Requests struct {
	Upserts, Deletes int64
}

// Requests returns the write requests sent so far.
func (s *Store) Requests() Requests {
	return Requests{Upserts: s.requests.upserts.Load(), Deletes: s.requests.deletes.Load()}
}

// New returns a Store for cfg. It does not contact the server (the first call does), so it
// succeeds while the server is still starting.
//
// Errors: HTTPHost or GRPCHost empty, Scheme not http/https, negative sizes.
func New(cfg Config) (*Store, error) {
	if cfg.HTTPHost == "" {
		return nil, errors.New("vectorstore: Config.HTTPHost is empty (want host:port of the Weaviate REST endpoint)")
	}
	if cfg.GRPCHost == "" {
		return nil, errors.New("vectorstore: Config.GRPCHost is empty (want host:port of the Weaviate gRPC endpoint)")
	}
	switch cfg.Scheme {
	case "":
		cfg.Scheme = "http"
	case "http", "https":
	default:
		return nil, fmt.Errorf("vectorstore: Config.Scheme %q: want http or https", cfg.Scheme)
	}
	if cfg.Timeout < 0 || cfg.BatchSize < 0 || cfg.Concurrency < 0 {
		return nil, errors.New("vectorstore: Config.Timeout, BatchSize and Concurrency must not be negative")
	}
	for _, cl := range []string{cfg.WriteConsistency, cfg.ReadConsistency} {
		switch cl {
		case "", ConsistencyOne, ConsistencyQuorum, ConsistencyAll:
		default:
			return nil, fmt.Errorf("vectorstore: consistency level %q: want %s, %s or %s", cl, ConsistencyOne, ConsistencyQuorum, ConsistencyAll)
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 256
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 2
	}
	if cfg.Retry.Steps == 0 {
		cfg.Retry = DefaultRetry
	}
	var headers map[string]string
	if cfg.APIKey != "" {
		headers = map[string]string{"Authorization": "Bearer " + cfg.APIKey}
	}
	wc := weaviate.Config{
		Host:       cfg.HTTPHost,
		Scheme:     cfg.Scheme,
		Headers:    headers,
		Timeout:    cfg.Timeout,
		GrpcConfig: &wgrpc.Config{Host: cfg.GRPCHost},
	}
	if cfg.Scheme == "https" {
		tc, err := tlsConfig(cfg.CABundle)
		if err != nil {
			return nil, err
		}
		wc.ConnectionClient = httpsClient(tc, cfg.Timeout)
		bridge, err := newGRPCTLSBridge(cfg.GRPCHost, tc)
		if err != nil {
			return nil, err
		}
		wc.GrpcConfig.Host = bridge.Addr()
	} else if len(cfg.CABundle) > 0 {
		return nil, errors.New("vectorstore: Config.CABundle needs Scheme https")
	}
	c, err := weaviate.NewClient(wc)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: client for %s: %w", cfg.HTTPHost, err)
	}
	// As the client: plain gRPC (the https bridge is local), TLS for a bare :443 endpoint,
	// here verified against the system roots.
	search, err := dialSearch(wc.GrpcConfig.Host, cfg.Scheme != "https" && strings.HasSuffix(cfg.GRPCHost, ":443"), &tls.Config{MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	return &Store{client: c, search: search, cfg: cfg, infos: map[string]CollectionInfo{}}, nil
}

// Client returns the underlying Weaviate client, for calls this package does not wrap.
func (s *Store) Client() *weaviate.Client { return s.client }

// retry runs fn until it succeeds, fails with a non-retryable error, ctx ends, or the backoff's
// attempts are spent (then the last retryable error is returned).
func (s *Store) retry(ctx context.Context, fn func() error) error {
	if s.cfg.Outage.Wait > 0 {
		return s.rideOutage(ctx, fn)
	}
	b := s.cfg.Retry
	for {
		err := fn()
		if err == nil || !IsRetryable(err) {
			return err
		}
		if b.Steps <= 1 {
			return err
		}
		d := b.Step()
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
	}
}

// Ready reports whether the server answers /v1/.well-known/ready; a refused connection is a
// [*RetryableError].
func (s *Store) Ready(ctx context.Context) error {
	ok, err := s.client.Misc().ReadyChecker().Do(ctx)
	if err != nil {
		return classify("ready", "", err)
	}
	if !ok {
		return &RetryableError{Op: "ready", Err: errors.New("server not ready")}
	}
	return nil
}

func isAlreadyExists(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "already exists")
}
