// Command bench-serve is the load generator of hack/bench-serve/run.sh: it sends SciFact test
// queries as Weaviate's text2vec-transformers module does (POST /vectors, task_type query) to
// running servers, ragops serve, the Python reference server and optionally a second ragops
// serve (-base-url: another build, e.g. main's, for a before/after in the same run), at each
// concurrency level in turn (closed loop: each client sends its next query when the previous
// answer arrives), rotating which server goes first, and prints a Markdown table of queries/s,
// p50 and p99 latency and server CPU-seconds per 1,000 queries (from /proc/PID/stat), plus the
// minimum cosine between ragops serve's vectors and each other server's for the same queries.
// With -rounds N every cell is measured N times, interleaved, and the table shows medians.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/ragops/ragops/evaluator/beir"
)

type target struct {
	name, url string
	pid       int
}

type result struct {
	Impl        string  `json:"impl"`
	Concurrency int     `json:"concurrency"`
	Queries     int     `json:"queries"`
	Errors      int     `json:"errors"`
	Seconds     float64 `json:"seconds"`
	QPS         float64 `json:"qps"`
	P50ms       float64 `json:"p50ms"`
	P99ms       float64 `json:"p99ms"`
	CPUPer1000  float64 `json:"cpuSecondsPer1000"`
}

func main() {
	goURL := flag.String("go-url", "", "ragops serve base URL")
	goPID := flag.Int("go-pid", 0, "ragops serve process id")
	pyURL := flag.String("py-url", "", "Python reference server base URL")
	pyPID := flag.Int("py-pid", 0, "Python reference server process id")
	baseURL := flag.String("base-url", "", "optional second ragops serve base URL (another build)")
	basePID := flag.Int("base-pid", 0, "its process id")
	baseName := flag.String("base-name", "ragops serve (base)", "its name in the table")
	scifact := flag.String("scifact", "", "SciFact folder (BEIR layout); its test queries are sent")
	duration := flag.Duration("duration", 8*time.Second, "measured time per server and concurrency")
	levels := flag.String("concurrency", "1,8,64", "comma-separated concurrency levels")
	rounds := flag.Int("rounds", 1, "rounds over all levels and servers; the table shows each cell's median")
	flag.Parse()
	ds, err := beir.Load(os.DirFS(*scifact), beir.Options{Split: "test", SkipSpans: true})
	if err != nil {
		log.Fatal(err)
	}
	var queries []string
	for _, q := range ds.Queries {
		queries = append(queries, q.Text)
	}
	targets := []target{{"ragops serve", *goURL, *goPID}, {"python reference", *pyURL, *pyPID}}
	if *baseURL != "" {
		targets = append(targets, target{*baseName, *baseURL, *basePID})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: time.Minute}

	minCos := 1.0
	for _, q := range queries[:20] {
		a, err := vectorOf(client, targets[0].url, q)
		if err != nil {
			log.Fatalf("parity query %q: %s: %v", q, targets[0].name, err)
		}
		for _, t := range targets[1:] {
			b, err := vectorOf(client, t.url, q)
			if err != nil {
				log.Fatalf("parity query %q: %s: %v", q, t.name, err)
			}
			minCos = math.Min(minCos, cosine(a, b))
		}
	}
	var cs []int
	for _, lv := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(lv)
		if err != nil {
			log.Fatal(err)
		}
		cs = append(cs, c)
	}
	type cell struct {
		impl string
		c    int
	}
	runs := map[cell][]result{}
	k := 0
	for range *rounds {
		for _, c := range cs {
			order := append(append([]target{}, targets[k%len(targets):]...), targets[:k%len(targets)]...)
			k++
			for _, t := range order {
				load(client, t, queries, c, time.Second) // warm the connections and the server
				r := load(client, t, queries, c, *duration)
				json.NewEncoder(os.Stderr).Encode(r)
				runs[cell{t.name, c}] = append(runs[cell{t.name, c}], r)
			}
		}
	}
	fmt.Printf("min cosine between ragops serve's vectors and the other servers' over 20 queries: %.7f\n\n", minCos)
	if *rounds > 1 {
		fmt.Printf("medians of %d rounds per cell\n\n", *rounds)
	}
	fmt.Println("| concurrency | server | queries/s | p50 ms | p99 ms | CPU-s / 1,000 queries | errors | queries/s vs reference |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range cs {
		ref := median(runs[cell{targets[1].name, c}], func(r result) float64 { return r.QPS })
		for _, t := range targets {
			rs := runs[cell{t.name, c}]
			errs := 0
			for _, r := range rs {
				errs += r.Errors
			}
			qps := median(rs, func(r result) float64 { return r.QPS })
			fmt.Printf("| %d | %s | %.1f | %.1f | %.1f | %.2f | %d | %.2fx |\n", c, t.name, qps,
				median(rs, func(r result) float64 { return r.P50ms }), median(rs, func(r result) float64 { return r.P99ms }),
				median(rs, func(r result) float64 { return r.CPUPer1000 }), errs, qps/ref)
		}
	}
}

// median returns the median of f over rs (the mean of the middle two for an even count).
func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return math.NaN()
	}
	return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
}

// load runs c closed-loop clients against t for d and returns the figures.
func load(client *http.Client, t target, queries []string, c int, d time.Duration) result {
	cpu0 := cpuSeconds(t.pid)
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	var lat []float64
	errs := 0
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for k := w; time.Now().Before(deadline); k += c {
				t0 := time.Now()
				_, err := vectorOf(client, t.url, queries[k%len(queries)])
				ms := float64(time.Since(t0).Microseconds()) / 1000
				mu.Lock()
				if err != nil {
					errs++
				} else {
					lat = append(lat, ms)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	cpu := cpuSeconds(t.pid) - cpu0
	sort.Float64s(lat)
	r := result{Impl: t.name, Concurrency: c, Queries: len(lat), Errors: errs, Seconds: secs, QPS: float64(len(lat)) / secs,
		P50ms: quantile(lat, 0.50), P99ms: quantile(lat, 0.99)}
	if len(lat) > 0 {
		r.CPUPer1000 = cpu / float64(len(lat)) * 1000
	}
	return r
}

func vectorOf(client *http.Client, base, text string) ([]float32, error) {
	body, _ := json.Marshal(map[string]any{"text": text, "config": map[string]any{"task_type": "query", "pooling_strategy": "masked_mean"}})
	resp, err := client.Post(base+"/vectors", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	var r struct {
		Vector []float32 `json:"vector"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Vector) == 0 {
		return nil, fmt.Errorf("bad response %.80s: %v", raw, err)
	}
	return r.Vector, nil
}

func cpuSeconds(pid int) float64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		log.Fatal(err)
	}
	st, err := p.Stat()
	if err != nil {
		log.Fatal(err)
	}
	return st.CPUTime()
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)]
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}
