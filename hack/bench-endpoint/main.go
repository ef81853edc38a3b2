// Command bench-endpoint measures the access query endpoint (issue 52, "Measured"): its
// latency against direct nearText on the same alias at several concurrencies, recall@10 of a
// filtered persona against an unfiltered search restricted to the same documents (SciFact's
// judged test queries), and the endpoint at 1%, 10% and 50% of the collection readable.
//
// It starts its own Weaviate (text2vec-transformers) and model server, builds a SciFact
// subset with the worker (pipeline/build) under path access rules, serves it with
// access/endpoint behind a throwaway OIDC issuer, and prints Markdown for BENCHMARKS.md.
// Run it with hack/bench-endpoint/run.sh.
package main

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/ragops/ragops/access/endpoint"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// tiers are the readable fractions: a document in tier t01 is read by p1, p10, p50 and all;
// t10 by p10, p50, all; t50 by p50, all; t100 by all only.
var tiers = []struct {
	dir    string
	below  uint32 // hash % 100 below this
	groups []string
}{
	{"t01", 1, []string{"p1", "p10", "p50"}},
	{"t10", 10, []string{"p10", "p50"}},
	{"t50", 50, []string{"p50"}},
	{"t100", 100, nil},
}

// readable reports whether a persona reading fraction pct (1, 10, 50, 100) reads tier dir.
func readable(pct int, dir string) bool {
	n := map[string]int{"t01": 1, "t10": 10, "t50": 50, "t100": 100}[dir]
	return n <= pct
}

func main() {
	scifact := flag.String("scifact", filepath.Join(os.Getenv("RAGOPS_DATASETS"), "scifact"), "SciFact folder (BEIR layout)")
	modelDir := flag.String("model", os.Getenv("RAGOPS_MODEL_DIR"), "embedding model folder (all-MiniLM-L6-v2)")
	docs := flag.Int("docs", 1000, "documents: every judged test document, then others in corpus order")
	requests := flag.Int("requests", 200, "requests per latency cell (at least 4 per client)")
	flag.Parse()
	log.SetFlags(log.Ltime)
	ctx := context.Background()

	corpus, queries, qrels := loadSciFact(*scifact)
	judged := map[string]bool{}
	for _, j := range qrels {
		for d := range j {
			judged[d] = true
		}
	}
	var picked []map[string]string
	for _, d := range corpus {
		if judged[d["_id"]] {
			picked = append(picked, d)
		}
	}
	for _, d := range corpus {
		if len(picked) >= *docs {
			break
		}
		if !judged[d["_id"]] {
			picked = append(picked, d)
		}
	}
	dir, err := os.MkdirTemp("", "bench-endpoint-")
	check(err)
	defer os.RemoveAll(dir)
	tierOf := map[string]string{} // SciFact ID -> tier dir
	count := map[string]int{}
	for _, d := range picked {
		h := fnv.New32a()
		h.Write([]byte(d["_id"]))
		v := h.Sum32() % 100
		for _, t := range tiers {
			if v < t.below {
				tierOf[d["_id"]] = t.dir
				count[t.dir]++
				break
			}
		}
		p := filepath.Join(dir, tierOf[d["_id"]], d["_id"]+".md")
		check(os.MkdirAll(filepath.Dir(p), 0o755))
		check(os.WriteFile(p, []byte("# "+d["title"]+"\n\n"+d["text"]+"\n"), 0o644))
	}
	log.Printf("%d documents in %s: tiers %v", len(picked), dir, count)

	// Model server and Weaviate.
	m, err := embedder.Load(*modelDir, embedder.Options{IntraOpThreads: 1, RunTokens: embedder.CPURunTokens})
	check(err)
	hash, err := embedder.FolderHash(*modelDir)
	check(err)
	ms, err := serving.New(m, serving.Options{ModelHash: hash})
	check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() { _ = http.Serve(ln, ms.Handler()) }()
	check(ms.Warmup(ctx))
	modelURL := "http://" + ln.Addr().String()
	wv, err := weaviatetest.Launch(ctx, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	check(err)
	cleanup = func() { _ = wv.Stop() }
	defer cleanup()

	// The collection: built by the worker with path access rules, behind its alias.
	const ns, index = "bench", "scifact"
	collection, _ := vectorstore.CollectionName(ns, index, "r1")
	alias, _ := vectorstore.AliasName(ns, index)
	access := &ragopsv1alpha1.AccessSpec{Default: ragopsv1alpha1.AccessDeny, Rules: []ragopsv1alpha1.AccessRule{{Path: "**", Groups: []string{"all"}}}}
	for _, t := range tiers {
		if t.groups != nil {
			access.Rules = append(access.Rules, ragopsv1alpha1.AccessRule{Path: t.dir + "/**", Groups: t.groups})
		}
	}
	p := plan.Build{Version: plan.Version, Namespace: ns, Index: index, Revision: "r1", Collection: collection, Shards: 1,
		Source:   plan.Source{Dir: dir},
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 256},
		ModelDir: *modelDir, ModelServer: modelURL,
		Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1},
		Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
		Access:   access}
	start := time.Now()
	res, err := build.Run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), p, build.Options{})
	check(err)
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	check(err)
	check(store.SetAlias(ctx, alias, collection))
	chunks, err := store.Count(ctx, alias)
	check(err)
	log.Printf("built %d documents, %d chunks in %v", res.Documents, chunks, time.Since(start).Round(time.Second))

	// The endpoint behind a throwaway OIDC issuer.
	is := newIssuer()
	hs := httptest.NewServer((&endpoint.Server{
		Authorizer: &endpoint.Authorizer{Authn: &endpoint.Chain{OIDC: []*endpoint.OIDC{{Issuer: endpoint.OIDCIssuer{URL: is.url, ClientID: "ragops"}}}}},
		Resolver:   resolver{endpoint.Target{Alias: alias, Store: store}}}).Handler())
	defer hs.Close()
	url := hs.URL + "/v1/indexes/" + index + "/search"
	tokens := map[int]string{}
	for pct, g := range map[int]string{1: "p1", 10: "p10", 50: "p50", 100: "all"} {
		tokens[pct] = is.token(g, []string{g})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	search := func(pct, k int, q string) ([]vectorstore.Hit, error) {
		body, _ := json.Marshal(endpoint.Request{Query: q, Mode: "dense", K: k})
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokens[pct])
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
		}
		var out endpoint.Response
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
		hits := make([]vectorstore.Hit, len(out.Results))
		for i, r := range out.Results {
			hits[i] = vectorstore.Hit{DocID: r.DocID}
		}
		return hits, nil
	}
	direct := func(k int, q string) ([]vectorstore.Hit, error) {
		return store.Search(ctx, alias, vectorstore.Query{Mode: vectorstore.ModeDense, Text: q, EmbedText: true, Limit: k, WithText: true})
	}
	var qids []string
	for id := range qrels {
		qids = append(qids, id)
	}
	slices.Sort(qids)
	text := func(i int) string { return queries[qids[i%len(qids)]] }

	// Warm both paths.
	for i := range 20 {
		_, err := direct(10, text(i))
		check(err)
		_, err = search(100, 10, text(i))
		check(err)
	}

	fmt.Printf("\n%d SciFact documents (%d judged), %d chunks; tiers %v; dense (nearText), k=10\n\n", len(picked), len(judged), chunks, count)
	fmt.Println("| Concurrency | Direct nearText p50 / p99 | q/s | Endpoint (persona reads 100%) p50 / p99 | q/s | Added p50 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, conc := range []int{1, 8, 64} {
		n := max(*requests, 4*conc)
		// Rounds in the order direct, endpoint, endpoint, direct, so that a drift of the
		// shared machine's load weighs on both alike.
		df := func(i int) (int, error) { h, err := direct(10, text(i)); return len(h), err }
		ef := func(i int) (int, error) { h, err := search(100, 10, text(i)); return len(h), err }
		d1, e1 := load(n/2, conc, df), load(n/2, conc, ef)
		e, d := merge(e1, load(n/2, conc, ef)), merge(d1, load(n/2, conc, df))
		fmt.Printf("| %d | %s / %s | %.1f | %s / %s | %.1f | %s |\n", conc, ms2(d.p(0.5)), ms2(d.p(0.99)), d.qps, ms2(e.p(0.5)), ms2(e.p(0.99)), e.qps, ms2(e.p(0.5)-d.p(0.5)))
	}

	fmt.Println("\n| Readable | Endpoint p50 / p99 (8 clients) | q/s | Hits returned (mean of k=10) | Chunks outside the persona's tiers |")
	fmt.Println("|---|---|---|---|---|")
	for _, pct := range []int{1, 10, 50, 100} {
		var mu sync.Mutex
		leaks := 0
		readableDocs := 0
		for _, d := range picked {
			if readable(pct, tierOf[d["_id"]]) {
				readableDocs++
			}
		}
		r := load(*requests, 8, func(i int) (int, error) {
			h, err := search(pct, 10, text(i))
			mu.Lock()
			for _, x := range h {
				if !readable(pct, path.Dir(x.DocID)) {
					leaks++
				}
			}
			mu.Unlock()
			return len(h), err
		})
		fmt.Printf("| %d%% (%d documents) | %s / %s | %.1f | %.2f | %d |\n", pct, readableDocs, ms2(r.p(0.5)), ms2(r.p(0.99)), r.qps, r.meanHits, leaks)
	}

	fmt.Println("\n| Persona | Queries (≥1 relevant readable) | recall@10 filtered (endpoint) | recall@10 unfiltered, restricted to the same documents | Paired difference (95% interval) |")
	fmt.Println("|---|---|---|---|---|")
	for _, pct := range []int{10, 50} {
		var fr, ur []float64
		for _, qid := range qids {
			j := map[string]int{}
			for d, g := range qrels[qid] {
				if t, ok := tierOf[d]; ok && readable(pct, t) {
					j[d] = g
				}
			}
			if len(j) == 0 {
				continue
			}
			fh, err := search(pct, 10, queries[qid])
			check(err)
			// Unfiltered: deep enough to hold the readable top 10, then restricted to the
			// persona's documents (as an Evaluation over a collection of only those).
			uh, err := direct(1000, queries[qid])
			check(err)
			var kept []vectorstore.Hit
			for _, h := range uh {
				if readable(pct, path.Dir(h.DocID)) && len(kept) < 10 {
					kept = append(kept, h)
				}
			}
			fr = append(fr, metrics.RecallAt(ranking(fh), j, 10))
			ur = append(ur, metrics.RecallAt(ranking(kept), j, 10))
		}
		diff := make([]float64, len(fr))
		for i := range fr {
			diff[i] = fr[i] - ur[i]
		}
		md, hw := meanCI(diff)
		mf, hf := meanCI(fr)
		mu, hu := meanCI(ur)
		fmt.Printf("| reads %d%% | %d | %.4f ± %.4f | %.4f ± %.4f | %+.4f ± %.4f |\n", pct, len(fr), mf, hf, mu, hu, md, hw)
	}
}

// ranking is the documents of hits (chunks, best first), first occurrences only; SciFact IDs.
func ranking(hits []vectorstore.Hit) []string {
	var out []string
	for _, h := range hits {
		id := strings.TrimSuffix(path.Base(h.DocID), ".md")
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// meanCI returns the mean of xs and the half-width of its 95% normal interval.
func meanCI(xs []float64) (float64, float64) {
	if len(xs) < 2 {
		return math.NaN(), math.NaN()
	}
	var s, ss float64
	for _, x := range xs {
		s += x
	}
	mean := s / float64(len(xs))
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, 1.96 * math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

type result struct {
	lat      []time.Duration
	qps      float64
	meanHits float64
}

// merge pools two rounds: their latencies, and their queries over their summed time.
func merge(a, b result) result {
	lat := append(slices.Clone(a.lat), b.lat...)
	slices.Sort(lat)
	na, nb := float64(len(a.lat)), float64(len(b.lat))
	return result{lat: lat, qps: (na + nb) / (na/a.qps + nb/b.qps), meanHits: (a.meanHits*na + b.meanHits*nb) / (na + nb)}
}

func (r result) p(q float64) time.Duration {
	return r.lat[min(len(r.lat)-1, int(math.Ceil(q*float64(len(r.lat))))-1)]
}

func ms2(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// load runs n calls of f over conc clients; any error stops the program.
func load(n, conc int, f func(i int) (int, error)) result {
	lat := make([]time.Duration, n)
	hits := make([]int, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for i := range next {
				t := time.Now()
				h, err := f(i)
				lat[i] = time.Since(t)
				check(err)
				hits[i] = h
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	total := 0
	for _, h := range hits {
		total += h
	}
	return result{lat: lat, qps: float64(n) / el.Seconds(), meanHits: float64(total) / float64(n)}
}

type resolver struct{ t endpoint.Target }

func (r resolver) Resolve(context.Context, string) (endpoint.Target, error) { return r.t, nil }

// issuer is a throwaway OIDC issuer: discovery and JWKS, RS256 tokens.
type issuer struct {
	url string
	key *rsa.PrivateKey
}

func newIssuer() *issuer {
	key, err := rsa.GenerateKey(crand.Reader, 2048)
	check(err)
	is := &issuer{key: key}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	is.url = srv.URL
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/auth", "token_endpoint": is.url + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	return is
}

func (is *issuer) token(sub string, groups []string) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	check(err)
	payload, _ := json.Marshal(map[string]any{"iss": is.url, "aud": "ragops", "sub": sub, "groups": groups,
		"iat": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(2 * time.Hour).Unix()})
	jws, err := sig.Sign(payload)
	check(err)
	s, err := jws.CompactSerialize()
	check(err)
	return s
}

// loadSciFact reads corpus.jsonl (id -> title, text), queries.jsonl and qrels/test.tsv.
func loadSciFact(dir string) ([]map[string]string, map[string]string, map[string]map[string]int) {
	var corpus []map[string]string
	eachLine(filepath.Join(dir, "corpus.jsonl"), func(b []byte) {
		var d struct{ ID, Title, Text string }
		var raw map[string]any
		check(json.Unmarshal(b, &raw))
		d.ID, _ = raw["_id"].(string)
		d.Title, _ = raw["title"].(string)
		d.Text, _ = raw["text"].(string)
		corpus = append(corpus, map[string]string{"_id": d.ID, "title": d.Title, "text": d.Text})
	})
	queries := map[string]string{}
	eachLine(filepath.Join(dir, "queries.jsonl"), func(b []byte) {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		check(json.Unmarshal(b, &q))
		queries[q.ID] = q.Text
	})
	qrels := map[string]map[string]int{}
	first := true
	eachLine(filepath.Join(dir, "qrels", "test.tsv"), func(b []byte) {
		if first {
			first = false
			return
		}
		f := strings.Split(string(b), "\t")
		var g int
		fmt.Sscan(f[2], &g)
		if qrels[f[0]] == nil {
			qrels[f[0]] = map[string]int{}
		}
		qrels[f[0]][f[1]] = g
	})
	return corpus, queries, qrels
}

func eachLine(p string, f func([]byte)) {
	fh, err := os.Open(p)
	check(err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			f(sc.Bytes())
		}
	}
	check(sc.Err())
}

// cleanup stops the throwaway Weaviate when the program fails.
var cleanup = func() {}

func check(err error) {
	if err != nil {
		cleanup()
		log.Fatal(err)
	}
}
