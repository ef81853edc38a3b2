package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/evaluator/metrics"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/vectorstore"
)

// TestModelChangeRolloutUnderNearTextLoad (issue 31, the rollout the serving path makes safe,
// through the operator): a GitOps change of an Index's spec.model from all-MiniLM-L6-v2 to
// e5-small-v2 builds a revision, gates it and moves the alias while 4 clients query the
// alias by nearText in full passes over the 300 SciFact test queries, as apps with no model
// of their own do. No query fails; every query's hits come from one revision; each client's
// recall@10 over every pass answered wholly by one revision equals, to the 4 decimals of
// status, that revision's run of an Evaluation that embeds through Weaviate; status.serving
// names the e5 server and its model hash after the move. Beside them, a client that keeps
// embedding with MiniLM (its model server, as an app pinned to the old model would) and
// searches the alias by nearVector after the move: its recall@10 is reported and must be
// below e5's.
func TestModelChangeRolloutUnderNearTextLoad(t *testing.T) {
	lc := upCluster(t)
	ctx := context.Background()
	const name = "model-rollout"
	judged := ragopsv1alpha1.DatasetSource{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "scifact", Path: "judged"}, Split: "test"}
	cs := &ragopsv1alpha1.ChunkingStrategy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyRecursive, Size: 128, Overlap: 16},
	}
	idx := &ragopsv1alpha1.Index{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ragopsv1alpha1.IndexSpec{
			// The judged abstracts and a twentieth of the 1,000 others: a build of about a minute.
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "scifact-judged"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: name},
			Sample:      &ragopsv1alpha1.DocumentSample{Fraction: 0.05, Seed: 1, Judged: &judged},
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://127.0.0.1:28080", GRPCAddress: "127.0.0.1:28079"},
			VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "flat"},
			Rollout: ragopsv1alpha1.RolloutSpec{
				Policy:               ragopsv1alpha1.RolloutEvaluationGated,
				RevisionHistoryLimit: 2,
				Gate: &ragopsv1alpha1.RolloutGate{
					MinRecall:  ptr.To(0.5),
					Evaluation: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeDense, K: []int32{10}, Dataset: judged},
				},
			},
		},
	}
	served := &ragopsv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-served"},
		Spec: ragopsv1alpha1.EvaluationSpec{
			IndexRef:             ragopsv1alpha1.LocalObjectReference{Name: name},
			QueryEmbedding:       ragopsv1alpha1.QueryEmbeddingWeaviate,
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeDense, K: []int32{10}, Dataset: judged},
		},
	}
	for _, o := range []client.Object{cs, idx, served} {
		if err := lc.k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{served, idx, cs} {
			_ = lc.k8s.Delete(context.Background(), o)
		}
	})

	// The MiniLM revision serves and its Evaluation ran.
	var r1 string
	var miniLM ragopsv1alpha1.ServingStatus
	waitUntil(t, 10*time.Minute, "the MiniLM revision active, served and evaluated", func() bool {
		idx = getIndex(t, lc.k8s, name)
		r1 = idx.Status.ActiveRevision
		if s := idx.Status.Serving; s != nil {
			miniLM = *s
		}
		_, ok := runOf(t, lc.k8s, served.Name, r1)
		return r1 != "" && ok && miniLM.Revision == r1 && miniLM.ModelHash != ""
	})
	alias, err := vectorstore.AliasName(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := evaluator.LoadDataset(ctx, evaluator.DatasetSource{Dir: filepath.Join(lc.state, "data", "scifact", "judged")}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Queries) != 300 {
		t.Fatalf("%d test queries, want 300", len(ds.Queries))
	}

	// 4 clients query the alias by nearText in full passes until each has finished a pass
	// that began after the alias moved.
	type answer struct {
		ranking []string
		revs    map[string]bool
		err     error
	}
	var (
		moved, stopped atomic.Bool
		passes         = make([][][]answer, 4) // client -> pass -> query (in ds.Queries order)
		deadline       = time.Now().Add(20 * time.Minute)
		wg             sync.WaitGroup
	)
	defer func() { stopped.Store(true); wg.Wait() }() // a failed wait below ends the clients too
	for c := range passes {
		wg.Go(func() {
			for time.Now().Before(deadline) && !stopped.Load() {
				after := moved.Load()
				pass := make([]answer, len(ds.Queries))
				for j := range pass {
					k := (j + 75*c) % len(pass)
					rr := &revisionRetriever{store: lc.store, target: alias, revs: map[string]bool{}}
					qctx, cancel := context.WithTimeout(ctx, 15*time.Second)
					got, err := evaluator.RetrieveDocuments(qctx, rr, evaluator.Query{ID: ds.Queries[k].ID, Text: ds.Queries[k].Text, Mode: evaluator.Dense, EmbedText: true}, 10, evaluator.Growth{})
					cancel()
					pass[k] = answer{ranking: docIDs(got.Docs), revs: rr.revs, err: err}
					time.Sleep(50 * time.Millisecond) // 4 clients, not 4 CPU hogs beside the build
				}
				passes[c] = append(passes[c], pass)
				if after {
					return
				}
			}
		})
	}

	// The GitOps commit: another model.
	idx = getIndex(t, lc.k8s, name)
	idx.Spec.Model = ragopsv1alpha1.ModelSpec{Name: "e5-small-v2", ImagePath: "/models/e5-small-v2"}
	if err := lc.k8s.Update(ctx, idx); err != nil {
		t.Fatal(err)
	}
	var r2 string
	waitUntil(t, 15*time.Minute, "the e5-small-v2 revision on the alias", func() bool {
		idx = getIndex(t, lc.k8s, name)
		if c := meta(idx, ragopsv1alpha1.ConditionStalled); c != nil {
			t.Fatalf("Index stalled: %s", c.Message)
		}
		r2 = idx.Status.ActiveRevision
		return r2 != r1 && r2 != ""
	})
	moved.Store(true)
	movedAt := time.Now()
	wg.Wait()
	t.Logf("alias %s moved from %s to %s; the clients finished their passes %s later", alias, r1, r2, time.Since(movedAt).Round(time.Second))

	e5 := idx.Status.Serving
	if e5 == nil || e5.Revision != r2 || e5.ModelHash == "" || e5.ModelHash == miniLM.ModelHash || e5.Endpoint == miniLM.Endpoint {
		t.Errorf("status.serving after the move %+v, before %+v: want r2's own model server and hash", e5, miniLM)
	}
	want := map[string]float64{}
	for _, rev := range []string{r1, r2} {
		var run ragopsv1alpha1.EvaluationRun
		waitUntil(t, 10*time.Minute, "the served Evaluation's run on "+rev, func() bool {
			var ok bool
			run, ok = runOf(t, lc.k8s, served.Name, rev)
			return ok
		})
		want[rev] = *run.RecallAt10
	}

	failed, mixed, total := 0, 0, 0
	for c, ps := range passes {
		whole := map[string]int{}
		for p, pass := range ps {
			run := map[string][]string{}
			revs := map[string]bool{}
			for k, a := range pass {
				total++
				switch {
				case a.err != nil:
					failed++
					if failed <= 5 {
						t.Errorf("client %d pass %d query %s: %v", c, p, ds.Queries[k].ID, a.err)
					}
				case len(a.revs) != 1:
					if mixed++; mixed <= 5 {
						t.Errorf("client %d pass %d query %s: hits from revisions %v", c, p, ds.Queries[k].ID, a.revs)
					}
				}
				for rev := range a.revs {
					revs[rev] = true
				}
				run[ds.Queries[k].ID] = a.ranking
			}
			if len(revs) != 1 {
				continue // the pass the alias moved in
			}
			var rev string
			for rev = range revs {
			}
			res, err := metrics.Evaluate(run, ds.Qrels, []int{10})
			if err != nil {
				t.Fatal(err)
			}
			got := evaluator.Round4(res.Mean[metrics.Name(metrics.Recall, 10)])
			if got != want[rev] {
				t.Errorf("client %d pass %d on %s: recall@10 %.4f, the revision's Evaluation %.4f", c, p, rev, got, want[rev])
			}
			whole[rev]++
		}
		t.Logf("client %d: %d passes, whole passes per revision %v, each with its revision's recall@10", c, len(ps), whole)
		if whole[r1] == 0 || whole[r2] == 0 {
			t.Errorf("client %d: whole passes per revision %v, want one on %s (while %s built) and one on %s", c, whole, r1, r2, r2)
		}
	}
	t.Logf("%d nearText queries through the alias during the rollout: %d failed, %d with hits of two revisions", total, failed, mixed)
	if failed != 0 || mixed != 0 {
		t.Errorf("%d of %d queries failed and %d mixed revisions: want none", failed, total, mixed)
	}

	// The client that kept its MiniLM query embedding, after the move.
	run := map[string][]string{}
	for _, q := range ds.Queries {
		v, err := embedQuery(miniLM.Endpoint, q.Text)
		if err != nil {
			t.Fatalf("MiniLM model server %s: %v", miniLM.Endpoint, err)
		}
		got, err := evaluator.RetrieveDocuments(ctx, evaluator.StoreRetriever{Store: lc.store, Target: alias}, evaluator.Query{ID: q.ID, Vector: v, Mode: evaluator.Dense}, 10, evaluator.Growth{})
		if err != nil {
			t.Fatal(err)
		}
		run[q.ID] = docIDs(got.Docs)
	}
	res, err := metrics.Evaluate(run, ds.Qrels, []int{10})
	if err != nil {
		t.Fatal(err)
	}
	stale := evaluator.Round4(res.Mean[metrics.Name(metrics.Recall, 10)])
	t.Logf("recall@10 over the 300 queries: MiniLM revision %s %.4f, e5-small-v2 revision %s %.4f (nearText through the alias); a client still embedding with MiniLM by nearVector after the move %.4f",
		r1, want[r1], r2, want[r2], stale)
	if stale >= want[r2] {
		t.Errorf("the stale MiniLM client's recall@10 %.4f is not below e5's %.4f", stale, want[r2])
	}
}

// revisionRetriever searches target as evaluator.StoreRetriever does and records the
// revisions whose collections answered.
type revisionRetriever struct {
	store  *vectorstore.Store
	target string
	revs   map[string]bool
}

func (r *revisionRetriever) Search(ctx context.Context, q evaluator.Query, limit int) ([]evaluator.ChunkHit, error) {
	hits, err := r.store.Search(ctx, r.target, vectorstore.Query{Mode: vectorstore.ModeDense, Text: q.Text, EmbedText: q.EmbedText, Vector: q.Vector, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]evaluator.ChunkHit, len(hits))
	for i, h := range hits {
		r.revs[h.Revision] = true
		out[i] = evaluator.ChunkHit{DocID: h.DocID, Ordinal: h.Ordinal, Start: h.Start, End: h.End, Score: float64(h.Score)}
	}
	return out, nil
}

func docIDs(docs []evaluator.DocHit) []string {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.DocID
	}
	return ids
}

// runOf returns the Evaluation's completed run on revision rev from status.history.
func runOf(t *testing.T, k8s client.Client, name, rev string) (ragopsv1alpha1.EvaluationRun, bool) {
	t.Helper()
	var ev ragopsv1alpha1.Evaluation
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ev); err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.Status.History {
		if r.Revision == rev && r.RecallAt10 != nil {
			return r, true
		}
	}
	return ragopsv1alpha1.EvaluationRun{}, false
}

// embedQuery embeds text as a query with the model server at endpoint (text2vec-transformers'
// POST /vectors, task_type query), as an app that embeds its own queries would.
func embedQuery(endpoint, text string) ([]float32, error) {
	body, _ := json.Marshal(serving.VectorsRequest{Text: text, Config: serving.VectorsConfig{TaskType: "query"}})
	resp, err := http.Post(endpoint+"/vectors", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST /vectors: %s", resp.Status)
	}
	var r serving.VectorsResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	return r.Vector, nil
}
