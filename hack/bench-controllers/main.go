// Command bench-controllers measures the ragops controllers at scale: many Index objects in one
// namespace, reconciled by the real `ragops manager` binary running as its own process.
//
// It starts envtest (etcd + kube-apiserver, package internal/testenv) and a real Weaviate
// (vectorstore/weaviatetest), runs `<ragops> manager` against the kube-apiserver, creates one
// ConfigMap Corpus, one ChunkingStrategy and -n Indexes pointing at the Weaviate, and plays
// the Job side for every build Job (chunks written into the revision collection in Weaviate,
// pods with termination messages, Job marked Complete) until every Index is Ready. It then
// reports:
//
//   - latencies per Index from creation to its first status write, to its build Job, and to
//     Ready, and from Job completion to Ready (p50/p99/max, wall clock as this process saw it);
//   - controller_runtime_reconcile_time_seconds{controller="index"} p50/p99 (estimated from the
//     histogram buckets like PromQL's histogram_quantile), reconcile totals by result and errors,
//     and the work queue wait (workqueue_queue_duration_seconds{name="index"});
//   - the manager's RSS from /proc/<pid>/status (VmRSS after a steady window, VmHWM peak) and
//     Go heap and goroutines from its /metrics;
//   - status writes during the steady window (watch events whose status changed; should be 0);
//   - optionally a "touch" round: an annotation on every Index forces one no-op reconcile each.
//
// Usage (hack/bench-controllers/run.sh prepares the binaries):
//
//	go run ./hack/bench-controllers -ragops bin/ragops [-n 500] [-steady 60s] [-benchmarks BENCHMARKS.md]
//
// Duration: with 500 Indexes on the shared 2-core machine the wait for Ready dominates (each
// revision needs a Weaviate collection and an alias, and Weaviate schema writes slow down as
// collections accumulate): about 25 minutes under load. -n 100 takes a few minutes.
//
// Control-plane binaries come from KUBEBUILDER_ASSETS or bin/ (hack/build-tools.sh controlplane
// etcd); weaviate-server from RAGOPS_WEAVIATE_BIN or bin/weaviate-server (hack/build-tools.sh
// weaviate).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

type options struct {
	n             int
	steady        time.Duration
	ragops        string
	benchmarks    string
	players       int
	creators      int
	readyTimeout  time.Duration
	touch         bool
	sync          bool
	syncTimeout   time.Duration
	keepArtifacts bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 500, "number of Index objects")
	flag.DurationVar(&o.steady, "steady", 60*time.Second, "steady-state window after every Index is Ready")
	flag.StringVar(&o.ragops, "ragops", "bin/ragops", "ragops binary (make build)")
	flag.StringVar(&o.benchmarks, "benchmarks", "", "Markdown file whose \"## Controllers at scale\" section is written (appended when missing)")
	flag.IntVar(&o.players, "players", 4, "concurrent Job players (what kubelets and embedder pods would do)")
	flag.IntVar(&o.creators, "creators", 4, "concurrent Index creators")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 30*time.Minute, "how long to wait for every Index to be Ready")
	flag.BoolVar(&o.touch, "touch", true, "after the steady window, annotate every Index once and measure the no-op reconciles")
	flag.BoolVar(&o.sync, "sync", true, "after the touch round, change the Corpus once and measure until every Index has synced it")
	flag.DurationVar(&o.syncTimeout, "sync-timeout", 20*time.Minute, "how long to wait for every Index to sync the changed Corpus")
	flag.BoolVar(&o.keepArtifacts, "keep", false, "keep the temporary folder (manager log)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-controllers:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench-controllers %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// docs is the ConfigMap corpus every Index reads.
var docs = map[string]string{
	"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.",
	"b.md": "# Motivering\nHet voorstel past binnen de begroting.",
	"c.md": "# Stemverhouding\n21 voor, 8 tegen.",
}

func run(o options) error {
	if o.n <= 0 {
		return fmt.Errorf("-n %d: want at least 1 Index", o.n)
	}
	bin, err := filepath.Abs(o.ragops)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		return fmt.Errorf("-ragops %s: not a file (build it with make build)", o.ragops)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "bench-controllers-")
	if err != nil {
		return err
	}
	if o.keepArtifacts {
		logf("artifacts in %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	res := &result{n: o.n, steady: o.steady, load0: loadAvg()}

	logf("starting envtest and Weaviate")
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	wv, err := weaviatetest.Launch(ctx, weaviatetest.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = wv.Stop() }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(env.Config, kubeconfig); err != nil {
		return err
	}
	logf("starting %s manager", bin)
	mgr, err := startManager(ctx, bin, kubeconfig, dir)
	if err != nil {
		return err
	}
	defer mgr.stop()

	k8s, err := client.New(env.Config, client.Options{Scheme: cmd.Scheme()})
	if err != nil {
		return err
	}
	const ns = "bench"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	rec := newRecorder(o.n)
	if err := rec.start(ctx, env.Config, ns); err != nil {
		return err
	}
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(docs))
	for k := range docs {
		names = append(names, k)
	}
	pl := &player{k8s: k8s, store: store, rec: rec, docs: names}
	playErrs := make(chan error, 1)
	for i := 0; i < o.players; i++ {
		go pl.run(ctx, playErrs)
	}

	// Sample the manager's memory once a second for the whole run.
	var samplesMu sync.Mutex
	var maxRSS uint64
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if s, err := mgr.sample(); err == nil {
				samplesMu.Lock()
				maxRSS = max(maxRSS, s.RSS)
				samplesMu.Unlock()
			}
		}
	}()

	time.Sleep(3 * time.Second)
	if res.idle, err = mgr.sample(); err != nil {
		return err
	}
	if res.idleMetrics, err = mgr.scrape(); err != nil {
		return err
	}

	logf("creating the Corpus and the ChunkingStrategy")
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: docs},
		&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
			Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}},
		&ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fixed"},
			Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}},
	} {
		if err := k8s.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T: %w", obj, err)
		}
	}
	if err := poll(ctx, 60*time.Second, "Corpus besluiten Ready", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c); err != nil {
			return false, err
		}
		return conditions.IsReady(&c), nil
	}); err != nil {
		return err
	}

	logf("creating %d Indexes (%d at a time)", o.n, o.creators)
	start := time.Now()
	res.cpuBefore = mustSample(mgr).CPU
	wvCPU0, _ := wv.CPUSeconds()
	if err := createIndexes(ctx, k8s, rec, ns, o, "http://"+wv.HTTPAddr, wv.GRPCAddr); err != nil {
		return err
	}
	res.createWall = time.Since(start)
	logf("created %d Indexes in %s; waiting for Ready", o.n, res.createWall.Round(time.Millisecond))

	deadline := time.Now().Add(o.readyTimeout)
	lastLog := time.Now()
	for rec.readyCount() < o.n {
		select {
		case err := <-playErrs:
			return err
		case <-time.After(250 * time.Millisecond):
		}
		if !mgr.alive() {
			return fmt.Errorf("ragops manager exited (%v); log: %s", mgr.waitErr, mgr.logPath)
		}
		if time.Now().After(deadline) {
			res.times = rec.snapshot()
			if m, err := mgr.scrape(); err == nil {
				res.steadyStartMetrics, res.steadyEndMetrics = m, m
				res.afterBuild, res.steadySample = mustSample(mgr), mustSample(mgr)
				res.load1 = loadAvg()
				fmt.Println("Partial figures (not every Index turned Ready):")
				fmt.Println(res.markdown())
			}
			return fmt.Errorf("%d of %d Indexes Ready after %s", rec.readyCount(), o.n, o.readyTimeout)
		}
		if time.Since(lastLog) > 15*time.Second {
			logProgress(mgr, rec, o.n)
			lastLog = time.Now()
		}
	}
	res.allReady = time.Since(start)
	res.afterBuild = mustSample(mgr)
	if c, err := wv.CPUSeconds(); err == nil {
		res.weaviateCPU = c - wvCPU0
	}
	logf("all %d Indexes Ready %s after the first create", o.n, res.allReady.Round(time.Millisecond))

	// Let the queue drain, then watch a steady window.
	_ = poll(ctx, 60*time.Second, "index work queue empty", func() (bool, error) {
		m, err := mgr.scrape()
		if err != nil {
			return false, err
		}
		return m.sum("workqueue_depth", map[string]string{"name": "index"}) == 0, nil
	})
	if res.steadyStartMetrics, err = mgr.scrape(); err != nil {
		return err
	}
	if res.apiSteadyStart, err = scrapeAPIServer(ctx, env.Config); err != nil {
		return err
	}
	steadyFrom := time.Now()
	logf("steady window of %s", o.steady)
	select {
	case <-time.After(o.steady):
	case <-ctx.Done():
		return ctx.Err()
	}
	steadyTo := time.Now()
	if res.steadyEndMetrics, err = mgr.scrape(); err != nil {
		return err
	}
	if res.apiSteadyEnd, err = scrapeAPIServer(ctx, env.Config); err != nil {
		return err
	}
	res.steady = steadyTo.Sub(steadyFrom)
	res.steadySample = mustSample(mgr)
	if p, err := procfs.NewProc(wv.PID()); err == nil {
		if st, err := p.NewStatus(); err == nil {
			res.weaviateRSS = st.VmRSS
		}
	}
	if names, err := store.Client().Schema().Getter().Do(ctx); err == nil {
		res.collections = len(names.Classes)
	}
	res.steadyWrites = rec.writesBetween(steadyFrom, steadyTo)
	res.times = rec.snapshot()

	if o.touch {
		logf("touch round: annotating every Index once")
		before := res.steadyEndMetrics
		touchFrom := time.Now()
		if err := touchIndexes(ctx, k8s, ns, o); err != nil {
			return err
		}
		want := before.sum("controller_runtime_reconcile_total", map[string]string{"controller": "index"}) + float64(o.n)
		err := poll(ctx, 5*time.Minute, "touch reconciles", func() (bool, error) {
			m, err := mgr.scrape()
			if err != nil {
				return false, err
			}
			return m.sum("controller_runtime_reconcile_total", map[string]string{"controller": "index"}) >= want &&
				m.sum("workqueue_depth", map[string]string{"name": "index"}) == 0, nil
		})
		if err != nil {
			return err
		}
		res.touchWall = time.Since(touchFrom)
		time.Sleep(2 * time.Second) // late status writes, if any, still count
		res.touchWrites = rec.writesBetween(touchFrom, time.Now())
		if res.touchMetrics, err = mgr.scrape(); err != nil {
			return err
		}
		res.touchSample = mustSample(mgr)
		if res.apiTouchEnd, err = scrapeAPIServer(ctx, env.Config); err != nil {
			return err
		}
		res.touchListWindow = time.Since(steadyTo)
		res.touched = true
	}
	if o.sync {
		if err := syncRound(ctx, k8s, env.Config, mgr, rec, ns, o, res, func() uint64 {
			samplesMu.Lock()
			defer samplesMu.Unlock()
			m := maxRSS
			maxRSS = 0 // the sync round's own peak from here on
			return m
		}); err != nil {
			return err
		}
	}
	res.final = mustSample(mgr)
	samplesMu.Lock()
	res.maxSampledRSS = max(res.maxSampledRSS, maxRSS)
	if o.sync {
		res.syncMaxRSS = maxRSS
	}
	samplesMu.Unlock()
	res.load1 = loadAvg()

	table := res.markdown()
	fmt.Println(table)
	if o.benchmarks != "" {
		if err := writeSection(o.benchmarks, res.section(table)); err != nil {
			return err
		}
		logf("wrote the \"## Controllers at scale\" section of %s", o.benchmarks)
	}
	return nil
}

// logProgress prints how far the run is and what the manager's index controller is doing.
func logProgress(mgr *managerProcess, rec *recorder, n int) {
	jobs, played := rec.jobCounts()
	line := fmt.Sprintf("%d/%d Ready, %d build Jobs created, %d played", rec.readyCount(), n, jobs, played)
	if m, err := mgr.scrape(); err == nil {
		idx := map[string]string{"controller": "index"}
		h := m.histogram("controller_runtime_reconcile_time_seconds", idx)
		line += fmt.Sprintf("; index reconciles %.0f (mean %s), queue depth %.0f, errors %.0f, goroutines %.0f",
			h.count(), secs(h.sum/h.count()), m.sum("workqueue_depth", map[string]string{"name": "index"}),
			m.sum("controller_runtime_reconcile_errors_total", idx), m.sum("go_goroutines", nil))
	}
	logf("%s", line)
}

func mustSample(m *managerProcess) procSample {
	s, err := m.sample()
	if err != nil {
		logf("read /proc of the manager: %v", err)
	}
	return s
}

// createIndexes creates o.n Indexes with o.creators concurrent clients.
func createIndexes(ctx context.Context, k8s client.Client, rec *recorder, ns string, o options, url, grpcAddr string) error {
	work := make(chan int)
	errs := make(chan error, o.creators)
	var wg sync.WaitGroup
	for w := 0; w < o.creators; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("idx-%04d", i)
				idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: ragopsv1alpha1.IndexSpec{
						CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
						StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed"},
						Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
						Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: url, GRPCAddress: grpcAddr},
						VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "flat"},
					}}
				rec.created(name, time.Now())
				if err := k8s.Create(ctx, idx); err != nil {
					errs <- fmt.Errorf("create Index %s: %w", name, err)
					return
				}
			}
		}()
	}
	var err error
loop:
	for i := 0; i < o.n; i++ {
		select {
		case work <- i:
		case err = <-errs:
			break loop
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// touchIndexes sets an annotation on every Index (the Index controller's predicate lets
// annotation changes through), forcing one reconcile each with nothing to do.
func touchIndexes(ctx context.Context, k8s client.Client, ns string, o options) error {
	stamp := time.Now().Format(time.RFC3339Nano)
	for i := 0; i < o.n; i++ {
		idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("idx-%04d", i)}}
		patch := []byte(`{"metadata":{"annotations":{"bench.ragops.dev/touch":"` + stamp + `"}}}`)
		if err := k8s.Patch(ctx, idx, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			return fmt.Errorf("annotate Index %s: %w", idx.Name, err)
		}
	}
	return nil
}

// poll calls cond every 500 ms until it returns true, or fails after timeout with the last error.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// syncRound changes the Corpus once (a fourth document in its ConfigMap) and waits until
// every Index's active revision holds the new corpus revision (their sync Jobs played like the
// builds), measuring the index reconciles, the kube-apiserver's LISTs and the manager's RSS
// over that window. takePeak returns the RSS peak sampled so far and restarts the sampling.
func syncRound(ctx context.Context, k8s client.Client, cfg *rest.Config, mgr *managerProcess, rec *recorder, ns string, o options, res *result, takePeak func() uint64) error {
	var corpus ragopsv1alpha1.Corpus
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &corpus); err != nil {
		return err
	}
	from := corpus.Status.Revision
	var err error
	if res.syncStartMetrics, err = mgr.scrape(); err != nil {
		return err
	}
	if res.apiSyncStart, err = scrapeAPIServer(ctx, cfg); err != nil {
		return err
	}
	res.maxSampledRSS = takePeak()
	logf("sync round: changing the Corpus (revision %s) once", from)
	start := time.Now()
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &cm); err != nil {
		return err
	}
	cm.Data["d.md"] = "# Besluit\nHet voorstel is aangenomen op " + start.Format(time.RFC3339) + "."
	if err := k8s.Update(ctx, &cm); err != nil {
		return err
	}
	var to string
	if err := poll(ctx, 2*time.Minute, "the Corpus's new revision", func() (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &corpus); err != nil {
			return false, err
		}
		to = corpus.Status.Revision
		return to != "" && to != from, nil
	}); err != nil {
		return err
	}
	lastLog := time.Now()
	deadline := time.Now().Add(o.syncTimeout)
	for rec.servedCount(to) < o.n {
		if !mgr.alive() {
			return fmt.Errorf("ragops manager exited (%v); log: %s", mgr.waitErr, mgr.logPath)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Indexes synced corpus revision %s after %s", rec.servedCount(to), o.n, to, o.syncTimeout)
		}
		if time.Since(lastLog) > 15*time.Second {
			logf("sync round: %d/%d Indexes hold corpus revision %s", rec.servedCount(to), o.n, to)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	res.syncWall = time.Since(start)
	logf("sync round: every Index synced in %s", res.syncWall.Round(time.Millisecond))
	if res.syncEndMetrics, err = mgr.scrape(); err != nil {
		return err
	}
	if res.apiSyncEnd, err = scrapeAPIServer(ctx, cfg); err != nil {
		return err
	}
	res.syncSample = mustSample(mgr)
	res.synced = true
	return nil
}
