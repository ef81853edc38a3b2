package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// result holds everything one run measured.
type result struct {
	n                  int
	createWall         time.Duration
	allReady           time.Duration
	steady             time.Duration
	idle               procSample
	afterBuild         procSample
	steadySample       procSample
	touchSample        procSample
	final              procSample
	cpuBefore          float64
	maxSampledRSS      uint64
	idleMetrics        metricSet
	steadyStartMetrics metricSet
	steadyEndMetrics   metricSet
	touchMetrics       metricSet
	steadyWrites       map[string]int
	touchWrites        map[string]int
	touched            bool
	touchWall          time.Duration
	times              []indexTimes
	load0, load1       string
	weaviateCPU        float64 // CPU-s from the first create to all Ready
	weaviateRSS        uint64  // at the end of the steady window
	collections        int
	// kube-apiserver scrapes around the steady window, after the touch round, and around the
	// sync round.
	apiSteadyStart, apiSteadyEnd, apiTouchEnd, apiSyncStart, apiSyncEnd metricSet
	syncStartMetrics, syncEndMetrics                                    metricSet
	synced                                                              bool
	syncWall                                                            time.Duration
	syncSample                                                          procSample
	syncMaxRSS                                                          uint64
	touchListWindow                                                     time.Duration // from apiSteadyEnd to apiTouchEnd
}

// listRate formats the kube-apiserver's LISTs between two scrapes over d.
func listRate(before, after metricSet, d time.Duration) string {
	total, by := listsSince(before, after)
	var parts []string
	for _, k := range sortedKeys(by) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, by[k]))
	}
	return fmt.Sprintf("%.2f/s (%.0f in %s: %s)", total/d.Seconds(), total, d.Round(time.Second), strings.Join(parts, ", "))
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// percentiles returns the nearest-rank p50, p99 and max of ds (NaN when empty).
func percentiles(ds []time.Duration) (p50, p99, mx float64) {
	if len(ds) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(ds)))) - 1
		return ds[max(i, 0)].Seconds()
	}
	return rank(0.50), rank(0.99), ds[len(ds)-1].Seconds()
}

// spans returns to-from for every Index that has both moments.
func (r *result) spans(from, to func(indexTimes) time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range r.times {
		a, b := from(t), to(t)
		if a.IsZero() || b.IsZero() {
			continue
		}
		out = append(out, b.Sub(a))
	}
	return out
}

func secs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v < 0.01:
		return fmt.Sprintf("%.1f ms", v*1000)
	case v < 1:
		return fmt.Sprintf("%.0f ms", v*1000)
	default:
		return fmt.Sprintf("%.1f s", v)
	}
}

// quant formats the q-quantile estimate of h; when the bucket holding it is coarse (upper bound
// at least 4x the lower, as in the work queue's powers of ten) the bucket is shown too, since
// the linear estimate inside it means little.
func quant(h histogram, q float64) string {
	v := h.quantile(q)
	lo, hi := h.bucketOf(q)
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(hi, 1):
		return "> " + secs(lo)
	case lo > 0 && hi/lo >= 4:
		return fmt.Sprintf("%s (bucket %s-%s)", secs(v), secs(lo), secs(hi))
	}
	return secs(v)
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func (r *result) markdown() string {
	var b strings.Builder
	row := func(what, value string) { fmt.Fprintf(&b, "| %s | %s |\n", what, value) }
	lat := func(what string, ds []time.Duration) {
		p50, p99, mx := percentiles(ds)
		row(what, fmt.Sprintf("p50 %s, p99 %s, max %s (%d Indexes)", secs(p50), secs(p99), secs(mx), len(ds)))
	}
	idx := map[string]string{"controller": "index"}
	final := r.steadyEndMetrics
	fmt.Fprintf(&b, "| measure (%d Indexes, one namespace) | value |\n| --- | --- |\n", r.n)
	row("Indexes Ready", fmt.Sprintf("%d of %d, the last %s after the first create (creates took %s)",
		countReady(r.times), r.n, secs(r.allReady.Seconds()), secs(r.createWall.Seconds())))
	lat("create -> first status write", r.spans(func(t indexTimes) time.Time { return t.created }, func(t indexTimes) time.Time { return t.firstStatus }))
	lat("create -> build Job created", r.spans(func(t indexTimes) time.Time { return t.created }, func(t indexTimes) time.Time { return t.jobCreated }))
	lat("player: build Job picked up -> Complete (Weaviate collection + 6 chunks, pod, Job status)", r.spans(func(t indexTimes) time.Time { return t.playStart }, func(t indexTimes) time.Time { return t.jobDone }))
	lat("build Job Complete -> Ready (alias set)", r.spans(func(t indexTimes) time.Time { return t.jobDone }, func(t indexTimes) time.Time { return t.ready }))
	lat("create -> Ready (end to end, Job side played)", r.spans(func(t indexTimes) time.Time { return t.created }, func(t indexTimes) time.Time { return t.ready }))
	h := final.histogram("controller_runtime_reconcile_time_seconds", idx)
	row("index reconcile time (controller_runtime_reconcile_time_seconds)", fmt.Sprintf("p50 %s, p99 %s, mean %s over %.0f reconciles",
		quant(h, 0.5), quant(h, 0.99), secs(h.sum/h.count()), h.count()))
	q := final.histogram("workqueue_queue_duration_seconds", map[string]string{"name": "index"})
	row("index work queue wait (workqueue_queue_duration_seconds)", fmt.Sprintf("p50 %s, p99 %s", quant(q, 0.5), quant(q, 0.99)))
	var results []string
	for _, res := range []string{"success", "requeue", "requeue_after", "error"} {
		results = append(results, fmt.Sprintf("%s %.0f", res, final.sum("controller_runtime_reconcile_total", map[string]string{"controller": "index", "result": res})))
	}
	row("index reconciles by result", strings.Join(results, ", "))
	row("index reconcile errors (controller_runtime_reconcile_errors_total)", fmt.Sprintf("%.0f", final.sum("controller_runtime_reconcile_errors_total", idx)))
	var others []string
	for _, c := range []string{"corpus", "chunkingstrategy", "evaluation"} {
		others = append(others, fmt.Sprintf("%s %.0f (errors %.0f)", c,
			final.sum("controller_runtime_reconcile_total", map[string]string{"controller": c}),
			final.sum("controller_runtime_reconcile_errors_total", map[string]string{"controller": c})))
	}
	row("other reconciles", strings.Join(others, ", "))
	row("manager RSS idle (caches synced, no objects)", rssSplit(r.idle))
	row("manager RSS when the last Index turned Ready", mib(r.afterBuild.RSS))
	row(fmt.Sprintf("manager RSS after %s steady state (VmRSS)", r.steady.Round(time.Second)), rssSplit(r.steadySample))
	row("manager peak RSS (VmHWM)", mib(r.steadySample.HWM))
	row("manager Go heap in use / goroutines, idle -> steady",
		fmt.Sprintf("%s / %.0f -> %s / %.0f",
			mib(uint64(r.idleMetrics.sum("go_memstats_heap_inuse_bytes", nil))), r.idleMetrics.sum("go_goroutines", nil),
			mib(uint64(final.sum("go_memstats_heap_inuse_bytes", nil))), final.sum("go_goroutines", nil)))
	row("manager CPU from first create to all Ready", fmt.Sprintf("%.1f CPU-s", r.afterBuild.CPU-r.cpuBefore))
	steadyRec := final.sum("controller_runtime_reconcile_total", nil) - r.steadyStartMetrics.sum("controller_runtime_reconcile_total", nil)
	row(fmt.Sprintf("status writes during the %s steady window", r.steady.Round(time.Second)),
		fmt.Sprintf("%d (Index %d, Corpus %d, ChunkingStrategy %d); reconciles %.0f; manager CPU %.1f CPU-s",
			sum(r.steadyWrites), r.steadyWrites["Index"], r.steadyWrites["Corpus"], r.steadyWrites["ChunkingStrategy"],
			steadyRec, r.steadySample.CPU-r.afterBuild.CPU))
	after := 0
	for _, t := range r.times {
		after += t.writesAfterReady
	}
	row("Index status writes after that Index was Ready (until the end of the steady window)", fmt.Sprint(after))
	if r.touched {
		th := r.touchMetrics.histogram("controller_runtime_reconcile_time_seconds", idx).minus(h)
		row(fmt.Sprintf("touch round: %d annotated Indexes, one no-op reconcile each", r.n),
			fmt.Sprintf("done in %s; reconcile p50 %s, p99 %s over %.0f; status writes %d; errors %.0f",
				secs(r.touchWall.Seconds()), quant(th, 0.5), quant(th, 0.99), th.count(), sum(r.touchWrites),
				r.touchMetrics.sum("controller_runtime_reconcile_errors_total", idx)-final.sum("controller_runtime_reconcile_errors_total", idx)))
		row("after the touch round: RSS / heap in use / goroutines",
			fmt.Sprintf("%s / %s / %.0f", mib(r.touchSample.RSS),
				mib(uint64(r.touchMetrics.sum("go_memstats_heap_inuse_bytes", nil))), r.touchMetrics.sum("go_goroutines", nil)))
	}
	if r.apiSteadyStart != nil && r.apiSteadyEnd != nil {
		row("kube-apiserver LISTs during the steady window (uncached reads; informers only watch then)", listRate(r.apiSteadyStart, r.apiSteadyEnd, r.steady))
	}
	if r.touched && r.apiTouchEnd != nil {
		row("kube-apiserver LISTs from the end of the steady window to the end of the touch round", listRate(r.apiSteadyEnd, r.apiTouchEnd, r.touchListWindow))
	}
	if r.synced {
		sh := r.syncEndMetrics.histogram("controller_runtime_reconcile_time_seconds", idx).minus(r.syncStartMetrics.histogram("controller_runtime_reconcile_time_seconds", idx))
		row(fmt.Sprintf("sync round: one Corpus change, %d Indexes sync it (sync Jobs played)", r.n),
			fmt.Sprintf("every sync done %s after the change; index reconcile p50 %s, p99 %s over %.0f; errors %.0f", secs(r.syncWall.Seconds()),
				quant(sh, 0.5), quant(sh, 0.99), sh.count(),
				r.syncEndMetrics.sum("controller_runtime_reconcile_errors_total", idx)-r.syncStartMetrics.sum("controller_runtime_reconcile_errors_total", idx)))
		row("sync round: kube-apiserver LISTs", listRate(r.apiSyncStart, r.apiSyncEnd, r.syncWall))
		row("sync round: manager RSS at the end / peak sampled during it", fmt.Sprintf("%s / %s", rssSplit(r.syncSample), mib(r.syncMaxRSS)))
	}
	if r.collections > 0 {
		row("Weaviate during the build: CPU / RSS after the steady window / collections", fmt.Sprintf("%.1f CPU-s / %s / %d", r.weaviateCPU, mib(r.weaviateRSS), r.collections))
	}
	row("machine load average (1/5/15 min) at start -> end", r.load0+" -> "+r.load1)
	return b.String()
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

func countReady(ts []indexTimes) int {
	n := 0
	for _, t := range ts {
		if !t.ready.IsZero() {
			n++
		}
	}
	return n
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

const sectionTitle = "## Controllers at scale"

func (r *result) section(table string) string {
	host, _ := os.Hostname()
	_ = host
	return fmt.Sprintf(`%s

Command: `+"`hack/bench-controllers/run.sh`"+` (flags pass through, e.g. `+"`-n 500 -steady 60s`"+`). The real `+"`ragops manager`"+`
binary runs as its own process (default flags, one worker per controller, progress interval 10 s)
against envtest's kube-apiserver v1.37.2 and etcd v3.7.3, with a real Weaviate v1.37.6. One ConfigMap
Corpus (3 documents), one ChunkingStrategy and %d Indexes (flat vector index) in one namespace. envtest
runs no pods, so the benchmark plays the Job side for every build Job as controllers/suite_test.go
does: it writes 6 chunks into the revision collection in Weaviate, creates a succeeded pod with the
termination message and marks the Job Complete (4 at a time). Latencies are wall clock as the
benchmark's watch saw them (creation = just before the Create call); reconcile and queue figures are
estimated from the manager's /metrics histogram buckets (linear inside a bucket, as PromQL's
histogram_quantile); RSS is VmRSS/VmHWM from /proc/<pid>/status. A status write is a watch event whose
status differs from the previous one.

Measured %s on the shared %d-core development machine **while other work ran** (a demo cluster and the
test suite; load average in the last row): the latencies and CPU figures are inflated by contention
and vary between runs; counts (reconciles, errors, status writes) and memory are steadier.

%s`, sectionTitle, r.n, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), table)
}

// writeSection replaces the "## Controllers at scale" section of path (up to the next "## "
// heading) or appends it at the end when the file has none; other sections are left as they are.
func writeSection(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(b)
	section = strings.TrimRight(section, "\n") + "\n"
	if i := strings.Index(text, "\n"+sectionTitle+"\n"); i >= 0 {
		start := i + 1
		end := len(text)
		if j := strings.Index(text[start+len(sectionTitle):], "\n## "); j >= 0 {
			end = start + len(sectionTitle) + j + 1
			section += "\n"
		}
		text = text[:start] + section + text[end:]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// rssSplit is a sample's RSS with its anonymous and file-backed parts.
func rssSplit(s procSample) string {
	return fmt.Sprintf("%s (anonymous %s, file-backed %s)", mib(s.RSS), mib(s.Anon), mib(s.File))
}
