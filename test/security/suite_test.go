// Package security tests the least-privilege controls of ragops against a real kube-apiserver
// (envtest, which enforces Pod Security admission), a real Weaviate that requires an API key,
// and the manager's reconcilers in process with every log line captured: worker pods pass
// Pod Security "restricted", and planted secret values appear in no status, Event, plan,
// Job, pod spec or log line.
package security

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Planted secret values: distinctive strings that must never appear outside their Secrets.
const (
	plantedS3Access   = "AKIAPLANTEDQ7X9ZLEAK"
	plantedS3Secret   = "s3secret-planted-9f8e7d6c5b4a3210"
	plantedGitPass    = "gitpw-planted-1a2b3c4d5e6f"
	plantedWeaviate   = "wvkey-planted-5e6f7a8b9c0d1e2f"
	plantedHTTPHeader = "Bearer hdr-planted-0d9c8b7a6f5e4d3c"
)

var planted = []string{plantedS3Access, plantedS3Secret, plantedGitPass, plantedWeaviate, plantedHTTPHeader}

var (
	env *testenv.Env
	k8s client.Client
	wv  *weaviatetest.Server
	// managerLog holds every line the manager logged (all verbosity levels).
	managerLog syncBuffer
)

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var sink io.Writer = &managerLog
	if os.Getenv("RAGOPS_TEST_VERBOSE") != "" {
		sink = io.MultiWriter(&managerLog, os.Stderr)
	}
	// The most verbose level there is, so a secret logged at any V-level is seen. Set before
	// envtest starts: controller-runtime discards every later log line for good when a line
	// (envtest's own, on a slow start) is logged 30 s before a logger is set.
	logger := zap.New(zap.WriteTo(sink), zap.Level(zapcore.Level(-127)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go's own lines (at klog's default verbosity, as in the manager)
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	bin, err := weaviatetest.BinaryPath()
	if err != nil {
		fmt.Println(err)
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			return 1
		}
		fmt.Println("SKIP: security tests need Weaviate")
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Weaviate with API-key authentication only: every call of the manager and of the test's
	// stand-in workers must carry the planted key.
	wv, err = weaviatetest.Launch(ctx, weaviatetest.Options{Binary: bin, ExtraEnv: []string{
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=false",
		"AUTHENTICATION_APIKEY_ENABLED=true",
		"AUTHENTICATION_APIKEY_ALLOWED_KEYS=" + plantedWeaviate,
		"AUTHENTICATION_APIKEY_USERS=ragops",
	}})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { _ = wv.Stop() }()

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: cmd.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	opts := controllers.Options{WorkerImage: "ragops:test", ProgressInterval: time.Second, DriftInterval: 2 * time.Second, FinalizerTimeout: time.Minute}
	if err := controllers.SetupWithManager(ctx, mgr, opts); err != nil {
		fmt.Println(err)
		return 1
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("manager:", err)
		}
	}()
	k8s = mgr.GetClient()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Println("cache did not sync")
		return 1
	}
	return m.Run()
}
