// Package weaviatetest starts a throwaway single-node Weaviate server for tests and benchmarks:
// free loopback ports, a temporary data folder, readiness wait, clean shutdown. The server runs
// with [EnvExactBM25] (USE_INVERTED_SEARCHABLE=false) so that BM25 results are exact. For fault
// tests, [Server.Kill] and [Server.Restart] stop it hard and start it again on the same data
// folder and ports.
//
// The server binary is the one hack/build-tools.sh builds (Weaviate v1.37.6 from source):
//
//	hack/build-tools.sh weaviate   # writes bin/weaviate-server
//
// Environment:
//   - RAGOPS_WEAVIATE_BIN: path of the weaviate-server binary; default bin/weaviate-server under
//     the module root (the folder holding the go.mod of github.com/ragops/ragops).
//   - RAGOPS_REQUIRE_ALL=1: [Start] fails the test instead of skipping it when the binary is missing
//     (CI sets it).
package weaviatetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// EnvBinary names the environment variable holding the weaviate-server binary path.
const EnvBinary = "RAGOPS_WEAVIATE_BIN"

// EnvRequireAll names the environment variable that turns a missing binary into a test failure.
const EnvRequireAll = "RAGOPS_REQUIRE_ALL"

// PrepareHint tells how to get the binary; it is part of every "binary missing" message.
const PrepareHint = "build it with hack/build-tools.sh weaviate (writes bin/weaviate-server) or set " + EnvBinary

// Options configures [Launch]. The zero value is usable.
type Options struct {
	// Binary is the weaviate-server path; empty means [BinaryPath].
	Binary string
	// Log receives the server's stdout and stderr; nil discards them (the last 64 KiB are
	// kept anyway and included in startup errors).
	Log io.Writer
	// ReadyTimeout bounds the wait for /v1/.well-known/ready; zero means 60 s.
	ReadyTimeout time.Duration
	// ExtraEnv adds or overrides server environment variables ("KEY=value").
	ExtraEnv []string
	// Modules lists modules to enable (ENABLE_MODULES); none by default. With
	// [ModuleTransformers] the server also gets [TransformersEnv] of TransformersURL.
	Modules []string
	// TransformersURL is the module-wide inference URL of text2vec-transformers, used for
	// collections that name none; empty means an address nothing listens on (collections
	// then must name their own passage and query URLs).
	TransformersURL string
}

// ModuleTransformers is Weaviate's text2vec-transformers module (see [Options.Modules]).
const ModuleTransformers = "text2vec-transformers"

// unusedURL is a loopback URL where nothing listens (port 9, discard, is not served here).
const unusedURL = "http://127.0.0.1:9"

// TransformersEnv returns the environment text2vec-transformers needs in Weaviate v1.37.6
// (modules/text2vec-transformers/module.go initVectorizer): TRANSFORMERS_INFERENCE_API must
// be set, or the module fails its Init and the server exits ("modules didn't initialize"),
// even when every collection names its own passageInferenceUrl and queryInferenceUrl; and
// TRANSFORMERS_WAIT_FOR_STARTUP=false, else startup blocks until url answers
// /.well-known/ready. An empty url means one nothing listens on.
func TransformersEnv(url string) []string {
	if url == "" {
		url = unusedURL
	}
	return []string{"TRANSFORMERS_INFERENCE_API=" + url, "TRANSFORMERS_WAIT_FOR_STARTUP=false"}
}

// moduleEnv returns the environment for opts.Modules (nil for none).
func (o *Options) moduleEnv() []string {
	if len(o.Modules) == 0 {
		return nil
	}
	env := []string{"ENABLE_MODULES=" + strings.Join(o.Modules, ",")}
	for _, m := range o.Modules {
		if m == ModuleTransformers {
			env = append(env, TransformersEnv(o.TransformersURL)...)
		}
	}
	return env
}

// Server is one running Weaviate process. Its methods are safe for concurrent use.
type Server struct {
	// HTTPAddr is the REST address, "127.0.0.1:port".
	HTTPAddr string
	// GRPCAddr is the gRPC address, "127.0.0.1:port".
	GRPCAddr string
	// DataDir is the temporary persistence folder, removed by Stop.
	DataDir string

	bin  string
	args []string
	env  []string
	out  io.Writer

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	tail     *tailBuffer
	stopOnce sync.Once
	stopErr  error
}

// FindModuleRoot walks up from the working directory to the folder whose go.mod declares
// module github.com/ragops/ragops.
func FindModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/ragops/ragops\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root of github.com/ragops/ragops not found above the working directory")
		}
		dir = parent
	}
}

// BinaryPath returns the weaviate-server path from RAGOPS_WEAVIATE_BIN, else
// <module root>/bin/weaviate-server. It returns an error naming [PrepareHint] when the file is
// not an executable regular file.
func BinaryPath() (string, error) {
	p := os.Getenv(EnvBinary)
	if p == "" {
		root, err := FindModuleRoot()
		if err != nil {
			return "", fmt.Errorf("weaviate-server binary: %w; %s", err, PrepareHint)
		}
		p = filepath.Join(root, "bin", "weaviate-server")
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("weaviate-server binary %s: %w; %s", p, err, PrepareHint)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("weaviate-server binary %s is not an executable file; %s", p, PrepareHint)
	}
	return p, nil
}

// Start launches a server for one test and stops it in t.Cleanup. When the binary is missing it
// skips the test, or fails it if RAGOPS_REQUIRE_ALL=1. Server output goes to the test log only
// when the test fails (the last 64 KiB).
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is [Start] with options (e.g. Modules); an empty opts.Binary means [Require]'s.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Require(t)
	if opts.Binary == "" {
		opts.Binary = bin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Launch(ctx, opts)
	if err != nil {
		t.Fatalf("start weaviate: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("weaviate log tail:\n%s", s.LogTail())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop weaviate: %v", err)
		}
	})
	return s
}

// Require returns [BinaryPath], or skips the test when the binary is missing (fails it when
// RAGOPS_REQUIRE_ALL=1), with a message saying how to build it.
func Require(t testing.TB) string {
	t.Helper()
	bin, err := BinaryPath()
	if err != nil {
		if os.Getenv(EnvRequireAll) == "1" {
			t.Fatalf("%v (%s=1)", err, EnvRequireAll)
		}
		t.Skip(err.Error())
	}
	return bin
}

// Launch starts weaviate-server on free loopback ports with a new temporary data folder and
// waits until GET /v1/.well-known/ready answers 200. On any failure the process is stopped and
// the folder removed; the error carries the log tail.
func Launch(ctx context.Context, opts Options) (*Server, error) {
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BinaryPath(); err != nil {
			return nil, err
		}
	}
	// gossip, data (= gossip+1), raft, raft RPC (= raft+1), gRPC, HTTP.
	ports, err := freePortBlock(6)
	if err != nil {
		return nil, err
	}
	gossip, dataPort, raft, raftRPC, grpcPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	s, err := launchNode(ctx, bin, opts, ports, Env("", grpcPort, gossip, dataPort, raft, raftRPC))
	if err != nil {
		return nil, err
	}
	if err := s.waitReadyOrStop(ctx, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// launchNode starts one server process with the port block [gossip, data, raft, raftRPC, gRPC,
// HTTP], a new temporary data folder (set as PERSISTENCE_DATA_PATH over env's) and env plus
// opts.ExtraEnv; it does not wait for readiness ([Server.waitReadyOrStop] does).
func launchNode(ctx context.Context, bin string, opts Options, ports []int, env []string) (*Server, error) {
	grpcPort, httpPort := ports[4], ports[5]
	data, err := os.MkdirTemp("", "ragops-weaviate-")
	if err != nil {
		return nil, err
	}
	s := &Server{
		HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
		GRPCAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)),
		DataDir:  data,
		tail:     &tailBuffer{max: 64 << 10},
	}
	s.bin = bin
	s.args = []string{"--host", "127.0.0.1", "--port", strconv.Itoa(httpPort), "--scheme", "http"}
	s.env = append(os.Environ(), env...)
	s.env = append(s.env, opts.moduleEnv()...)
	s.env = append(s.env, opts.ExtraEnv...)
	s.env = append(s.env, "PERSISTENCE_DATA_PATH="+data)
	s.out = s.tail
	if opts.Log != nil {
		s.out = io.MultiWriter(s.tail, opts.Log)
	}
	if err := s.start(); err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	return s, nil
}

// waitReadyOrStop waits for readiness (opts.ReadyTimeout, default 60 s); on failure it stops
// the server, removes its folder and returns the error with the log tail.
func (s *Server) waitReadyOrStop(ctx context.Context, opts Options) error {
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if err := s.waitReady(ctx, timeout); err != nil {
		s.Stop()
		return fmt.Errorf("%w\nweaviate log tail:\n%s", err, s.LogTail())
	}
	return nil
}

// start runs the server process with the recorded binary, flags and environment.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() { s.waitErr = cmd.Wait(); close(done) }()
	return nil
}

// Kill ends the server with SIGKILL, as a node loss or OOM kill would, and waits for it to
// exit; the data folder is kept for [Server.Restart]. It must not run concurrently with
// Restart or Stop.
func (s *Server) Kill() error {
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-s.done
	return nil
}

// Restart starts the server again after [Server.Kill] with the same data folder, ports and
// environment, and waits up to timeout (zero means 60 s) for readiness. It fails if the
// previous process is still running. It must not run concurrently with Kill or Stop.
func (s *Server) Restart(ctx context.Context, timeout time.Duration) error {
	select {
	case <-s.done:
	default:
		return errors.New("weaviate-server is still running; Kill it first")
	}
	if err := s.start(); err != nil {
		return err
	}
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if err := s.waitReady(ctx, timeout); err != nil {
		return fmt.Errorf("%w\nweaviate log tail:\n%s", err, s.LogTail())
	}
	return nil
}

// EnvExactBM25 makes collections created by the server use the map-collection inverted index
// and WAND (exact BM25) instead of BlockMax WAND, the default of new collections since Weaviate
// 1.29. On freshly imported SciFact chunks Weaviate 1.37.6's BlockMax WAND returned wrong BM25
// scores: the top 10 at limit 10 differed from the top 10 at limit 2000 in 676-2516 of 3,000
// positions (300 queries, varying between imports), and a 48-word chunk's own text found the
// chunk first only 120 of 251 times (upstream issue weaviate/weaviate#8704). With this setting
// all 3,000 top-10 scores equal an independent BM25 (k1 1.2, b 0.75, en stopwords; property
// length counted in distinct terms) and 251 of 251 chunks find themselves. It is read when a
// collection is created (recorded as invertedIndexConfig.usingBlockMaxWAND=false); collections
// created without it keep BlockMax WAND.
const EnvExactBM25 = "USE_INVERTED_SEARCHABLE=false"

// Env returns the server environment for a single local node with the given data folder and
// ports (keep dataPort = gossipPort+1 and raftRPCPort = raftPort+1, Weaviate's conventions)
// (FACTS.md: anonymous access, no vectorizer, autoschema off, fast raft timeouts, no pprof,
// no telemetry; plus [EnvExactBM25]). The HTTP port is passed as a flag, not here.
func Env(dataDir string, grpcPort, gossipPort, dataPort, raftPort, raftRPCPort int) []string {
	return []string{
		"PERSISTENCE_DATA_PATH=" + dataDir,
		"DEFAULT_VECTORIZER_MODULE=none",
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
		"AUTOSCHEMA_ENABLED=false",
		"CLUSTER_HOSTNAME=node1",
		"CLUSTER_IN_LOCALHOST=true",
		"CLUSTER_BIND_ADDR=127.0.0.1",
		"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
		"CLUSTER_GOSSIP_BIND_PORT=" + strconv.Itoa(gossipPort),
		"CLUSTER_DATA_BIND_PORT=" + strconv.Itoa(dataPort),
		"RAFT_PORT=" + strconv.Itoa(raftPort),
		"RAFT_INTERNAL_RPC_PORT=" + strconv.Itoa(raftRPCPort),
		"RAFT_BOOTSTRAP_EXPECT=1",
		"RAFT_TIMEOUTS_MULTIPLIER=1",
		"GRPC_PORT=" + strconv.Itoa(grpcPort),
		"DISABLE_TELEMETRY=true",
		"GO_PROFILING_DISABLE=true",
		"LOG_LEVEL=warning",
		EnvExactBM25,
	}
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := "http://" + s.HTTPAddr + "/v1/.well-known/ready"
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("weaviate-server exited before ready: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("weaviate-server not ready at %s after %s: %w", url, timeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// PID returns the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// CPUSeconds returns the user+system CPU time the server process has used so far, in seconds,
// read from /proc/<pid>/stat (Linux only).
func (s *Server) CPUSeconds() (float64, error) {
	p, err := procfs.NewProc(s.PID())
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
}

// LogTail returns the last 64 KiB of server output.
func (s *Server) LogTail() string { return s.tail.String() }

// Stop sends SIGTERM, waits up to 30 s (then SIGKILL), and removes the data folder. It is
// idempotent; later calls return the first call's result. A server that exited on its own
// before Stop is not an error.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
				<-s.done
				s.stopErr = errors.New("weaviate-server ignored SIGTERM for 30 s and was killed")
			}
		}
		if err := os.RemoveAll(s.DataDir); err != nil && s.stopErr == nil {
			s.stopErr = err
		}
	})
	return s.stopErr
}

// freePortBlock returns n consecutive TCP ports that were free on all interfaces (gRPC and the
// cluster data port bind all interfaces whatever is configured). Consecutive, because Weaviate
// derives some peer addresses by convention (data port = gossip port + 1, raft internal RPC
// port = raft port + 1): with unrelated ports a single node's raft join dials the wrong port
// and startup stalls for a minute. The block lies below the kernel's ephemeral range
// ([ephemeralPortStart]): a port in that range can be taken as the local port of any outgoing
// connection (a peer dialing a stopped node included), and a restarted node then fails to
// bind its raft port ("address already in use").
func freePortBlock(n int) ([]int, error) {
	lo, hi := 10000, ephemeralPortStart()
	if hi-lo < 10*n {
		lo, hi = 20000, 60000
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	for attempt := 0; attempt < 200; attempt++ {
		base := lo + r.IntN(hi-lo-n)
		ls := make([]net.Listener, 0, n)
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			ports := make([]int, n)
			for i := range ports {
				ports[i] = base + i
			}
			return ports, nil
		}
	}
	return nil, fmt.Errorf("no block of %d free TCP ports found in %d-%d", n, lo, hi)
}

// ephemeralPortStart is the first port of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), 32768 where it cannot be read.
func ephemeralPortStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	p, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return p
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Drop a partial first line.
	s := string(b.buf)
	if len(b.buf) == b.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}

// RootUser is the root user [RBACEnv] configures.
const RootUser = "root"

// RBACEnv returns the environment (for [Options.ExtraEnv]) of a Weaviate that enforces RBAC:
// no anonymous access, API-key authentication with rootKey for [RootUser], who is an RBAC root
// user, and dynamic database users (/v1/users/db) enabled.
func RBACEnv(rootKey string) []string {
	return []string{
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=false",
		"AUTHENTICATION_APIKEY_ENABLED=true",
		"AUTHENTICATION_APIKEY_ALLOWED_KEYS=" + rootKey,
		"AUTHENTICATION_APIKEY_USERS=" + RootUser,
		"AUTHENTICATION_DB_USERS_ENABLED=true",
		"AUTHORIZATION_RBAC_ENABLED=true",
		"AUTHORIZATION_RBAC_ROOT_USERS=" + RootUser,
	}
}
