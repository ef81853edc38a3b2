package serving_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Environment of a model-server child process: the test binary re-executed runs serving.Run
// (what `ragops serve` runs) on this address with this model folder.
const (
	envChildListen = "RAGOPS_TEST_SERVE_LISTEN"
	envChildModel  = "RAGOPS_TEST_SERVE_MODEL"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(envChildListen); addr != "" {
		os.Exit(serveChild(addr, os.Getenv(envChildModel)))
	}
	os.Exit(m.Run())
}

// serveChild is the model-server process: serving.Run on addr until SIGTERM.
func serveChild(addr, dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := serving.Config{ModelDir: dir, Embedder: embedder.Options{IntraOpThreads: 1}}
	if err := serving.Run(ctx, ln, cfg, slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serverProcess is a model server running as its own process.
type serverProcess struct {
	cmd *exec.Cmd
}

// startServerProcess starts a model-server process on addr and waits until it is ready.
func startServerProcess(t *testing.T, addr, dir string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildListen+"="+addr, envChildModel+"="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd}
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/.well-known/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("model server on %s not ready after 60 s (last: %v)", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *serverProcess) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// queryOutcome is one nearText query of the load.
type queryOutcome struct {
	start, end time.Time
	err        error
}

// Fault: the model server process is SIGKILLed while 4 clients query an Index by nearText
// through its alias (all-MiniLM-L6-v2, real Weaviate with text2vec-transformers, SciFact).
// Before the kill every query succeeds; while it is down queries fail with an error (none
// waits out its 10 s client deadline: they fail fast); from the first query that starts
// after the restarted server is ready, every query succeeds again. The window and the failed
// count are logged.
func TestModelServerKilledUnderQueryLoad(t *testing.T) {
	dir := miniLM(t)
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	proc := startServerProcess(t, addr, dir)
	// The documents' vectors come from an in-process copy of the same model; the collection's
	// vectorizer points at the process.
	local := servingtest.Start(t, dir, serving.Options{})
	idx := servingtest.SciFactIndex(t, store, &servingtest.Server{Server: local.Server, URL: "http://" + addr, Model: local.Model}, "serve", "faults", "r1", 120)

	var (
		mu       sync.Mutex
		outcomes []queryOutcome
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	for c := range 4 {
		wg.Go(func() {
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := idx.Queries[i%len(idx.Queries)]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				o := queryOutcome{start: time.Now()}
				hits, err := store.Search(ctx, idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Text: q.Text, EmbedText: true, Limit: 10})
				cancel()
				o.end, o.err = time.Now(), err
				if err == nil && len(hits) != 10 {
					o.err = fmt.Errorf("%d hits", len(hits))
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	time.Sleep(3 * time.Second)
	killed := time.Now()
	proc.kill()
	time.Sleep(2 * time.Second)
	startServerProcess(t, addr, dir)
	ready := time.Now()
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()

	var before, down, after, failed, hung int
	var firstErr error
	lastFail := killed
	for _, o := range outcomes {
		switch {
		case o.end.Before(killed):
			before++
			if o.err != nil {
				t.Errorf("a query before the kill failed: %v", o.err)
			}
		case o.start.After(ready):
			after++
			if o.err != nil {
				t.Errorf("a query started %v after the restarted server was ready failed: %v", o.start.Sub(ready), o.err)
			}
		default:
			down++
		}
		if o.err != nil {
			failed++
			if firstErr == nil {
				firstErr = o.err
			}
			if errors.Is(o.err, context.DeadlineExceeded) {
				hung++
			}
			if o.end.After(lastFail) {
				lastFail = o.end
			}
		}
	}
	if before == 0 || after == 0 || failed == 0 || hung != 0 {
		t.Fatalf("%d queries before the kill, %d during, %d after; %d failed, %d waited out their deadline", before, down, after, failed, hung)
	}
	t.Logf("%d queries: %d before the kill, %d while down or restarting, %d after; %d failed, none hung; failures from the kill to %v later (the restart took %v); first error: %v",
		len(outcomes), before, down, after, failed, lastFail.Sub(killed).Round(time.Millisecond), ready.Sub(killed).Round(time.Millisecond), firstErr)
}
