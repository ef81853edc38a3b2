package serving_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ragops/ragops/evaluator/beir"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// recallAt10 is the share of q's relevant documents among hits' documents.
func recallAt10(qrels map[string]int, hits []vectorstore.Hit) float64 {
	rel, found := 0, 0
	for _, g := range qrels {
		if g > 0 {
			rel++
		}
	}
	seen := map[string]bool{}
	for _, h := range hits {
		if qrels[h.DocID] > 0 && !seen[h.DocID] {
			seen[h.DocID] = true
			found++
		}
	}
	if rel == 0 {
		return 0
	}
	return float64(found) / float64(rel)
}

// The rollout the serving path makes safe: an Index's alias moves from an all-MiniLM-L6-v2
// revision (r1, wired to a MiniLM model server) to an e5-small-v2 revision (r2, wired to an
// e5 server, which adds e5's "query: " prefix) while 4 clients query it by nearText. No query
// fails; every result set comes wholly from one revision and equals that revision's own
// top 10 for the query (its collection queried directly); each client's recall@10 per
// revision equals the revision's recall over the same queries. Beside it, a client that keeps
// embedding with MiniLM and sends nearVector after the move gets e5's vectors searched with a
// MiniLM query: its recall@10 is logged next to the e5 revision's, and must be lower.
func TestAliasMoveUnderNearTextLoadSwitchesTheQueryModel(t *testing.T) {
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	miniSrv := servingtest.Start(t, miniLM(t), serving.Options{})
	e5Srv := servingtest.Start(t, e5(t), serving.Options{})
	r2 := servingtest.SciFactIndex(t, store, e5Srv, "serve", "rollout", "r2", 240)
	r1 := servingtest.SciFactIndex(t, store, miniSrv, "serve", "rollout", "r1", 240) // the alias points at r1
	queries := r1.Queries
	if len(queries) < 40 {
		t.Fatalf("only %d queries have all their documents indexed", len(queries))
	}
	ctx := t.Context()
	// Each revision's own answer to every query, from its collection.
	own := map[string][][]vectorstore.Hit{}
	recall := map[string]float64{}
	for rev, coll := range map[string]string{"r1": r1.Collection, "r2": r2.Collection} {
		for _, q := range queries {
			hits, err := store.Search(ctx, coll, vectorstore.Query{Mode: vectorstore.ModeDense, Text: q.Text, EmbedText: true, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			own[rev] = append(own[rev], hits)
			recall[rev] += recallAt10(r1.Qrels[q.ID], hits) / float64(len(queries))
		}
	}

	type result struct {
		query int
		rev   string
		hits  []vectorstore.Hit
		err   error
	}
	var (
		mu      sync.Mutex
		results = make([][]result, 4)
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	for c := range 4 {
		wg.Go(func() {
			// Each client goes through the queries in full passes, so that it scores every
			// query on the revision it reached.
			for i := 0; ; i++ {
				select {
				case <-stop:
					if i%len(queries) == 0 {
						return
					}
				default:
				}
				k := (i + c*7) % len(queries)
				qctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				hits, err := store.Search(qctx, r1.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Text: queries[k].Text, EmbedText: true, Limit: 10})
				cancel()
				r := result{query: k, hits: hits, err: err}
				if err == nil && len(hits) > 0 {
					r.rev = hits[0].Revision
				}
				mu.Lock()
				results[c] = append(results[c], r)
				mu.Unlock()
			}
		})
	}
	time.Sleep(2 * time.Second)
	if err := store.SetAlias(ctx, r1.Alias, r2.Collection); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	failed, mixed, differ := 0, 0, 0
	perRev := map[string]int{}
	for c, rs := range results {
		sum, n := map[string]float64{}, map[string]int{}
		for _, r := range rs {
			if r.err != nil {
				failed++
				t.Errorf("client %d query %d failed: %v", c, r.query, r.err)
				continue
			}
			for _, h := range r.hits {
				if h.Revision != r.rev {
					mixed++
				}
			}
			if !equalHits(r.hits, own[r.rev][r.query]) {
				differ++
			}
			sum[r.rev] += recallAt10(r1.Qrels[queries[r.query].ID], r.hits)
			n[r.rev]++
			perRev[r.rev]++
		}
		for rev := range n {
			t.Logf("client %d: %d queries on %s, recall@10 %.4f (the revision's %.4f)", c, n[rev], rev, sum[rev]/float64(n[rev]), recall[rev])
		}
	}
	if failed != 0 || mixed != 0 || differ != 0 || perRev["r1"] == 0 || perRev["r2"] == 0 || len(perRev) != 2 {
		t.Fatalf("%d failed, %d hits from another revision than their result set's, %d result sets unlike their revision's own, queries per revision %v", failed, mixed, differ, perRev)
	}

	// The client that kept its MiniLM query embedding.
	vecs, err := miniSrv.Model.EmbedQueries(ctx, textsOf(queries))
	if err != nil {
		t.Fatal(err)
	}
	stale := 0.0
	for k, q := range queries {
		hits, err := store.Search(ctx, r1.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Vector: vecs[k], Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		stale += recallAt10(r1.Qrels[q.ID], hits) / float64(len(queries))
	}
	t.Logf("after the move (%s ago): nearText recall@10 %.4f on r2 (e5-small-v2), %.4f on r1 before it (MiniLM); a client still embedding with MiniLM by nearVector: %.4f over %d queries",
		time.Since(moved).Round(time.Millisecond), recall["r2"], recall["r1"], stale, len(queries))
	if stale >= recall["r2"] {
		t.Fatalf("the stale MiniLM client's recall@10 %.4f is not below e5's %.4f", stale, recall["r2"])
	}
}

func textsOf(qs []beir.Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Text
	}
	return out
}
