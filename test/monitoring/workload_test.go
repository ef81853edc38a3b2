package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

// demo is the stack after the demo-sized workload both tests watch, in namespace ns:
//
//   - Index handbook (Corpus handbook, three documents) built and serving, with a BM25
//     Evaluation of its active revision; then its Corpus lists a fourth document and the sync
//     Job that would embed it runs and never finishes: handbook serves stale content.
//   - Index archive (Corpus archive): its first build Job fails, so it is Stalled
//     (BuildFailed) and not Ready.
type demo struct {
	*stack
	ns string
	// start is when the workload began (after Prometheus started scraping).
	start time.Time
}

// The Indexes of the demo workload.
const (
	staleIndex   = "handbook"
	stalledIndex = "archive"
)

var (
	demoOnce sync.Once
	demoRun  *demo
	// demoSkipped names the test that skipped for a missing prepared part.
	demoSkipped string
)

// demoWorkload starts the stack and runs the workload once for all tests of the package; a
// missing prepared part skips them all.
func demoWorkload(t *testing.T) *demo {
	t.Helper()
	demoOnce.Do(func() {
		defer func() {
			if t.Skipped() {
				demoSkipped = t.Name()
			}
		}()
		demoRun = runDemo(t)
	})
	if demoRun == nil {
		if demoSkipped != "" {
			t.Skipf("a prepared part is missing (the skip message of %s names it)", demoSkipped)
		}
		t.Fatal("the demo workload failed in an earlier test")
	}
	return demoRun
}

func runDemo(t *testing.T) *demo {
	t.Helper()
	s := startStack(t)
	d := &demo{stack: s, start: time.Now()}
	c := s.cp.Client
	ctx := context.Background()
	defer func() {
		if t.Failed() {
			t.Logf("manager log (last 8 KiB):\n%s", s.manager.tail(8192))
		}
	}()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNS}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	d.ns = ns.Name
	docs := map[string]string{
		"returns.md":  "# Returns\nItems can be returned within 30 days with the receipt.",
		"shipping.md": "# Shipping\nOrders ship within two working days.",
		"warranty.md": "# Warranty\nElectronics carry a two-year warranty.",
	}
	handbookDocs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "handbook-docs"}, Data: docs}
	archiveDocs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "archive-docs"}, Data: map[string]string{
		"2019.md": "# 2019\nThe shop opened its second store.",
	}}
	queries := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "queries"}, Data: map[string]string{
		"queries.jsonl": `{"_id":"q1","text":"how long to return an item"}` + "\n",
		"test.tsv":      "query-id\tcorpus-id\tscore\nq1\treturns.md\t1\n",
	}}
	strategy := &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "fixed"},
		Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}}
	objs := []client.Object{handbookDocs, archiveDocs, queries, strategy}
	for _, name := range []string{staleIndex, stalledIndex} {
		objs = append(objs,
			&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name},
				Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: name + "-docs"}}},
			&ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name},
				Spec: ragopsv1alpha1.IndexSpec{
					CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: name},
					StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: strategy.Name},
					Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
					Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://" + s.weaviate.HTTPAddr, GRPCAddress: s.weaviate.GRPCAddr},
				}})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}

	d.playModelServers(t)

	// handbook's build: the chunks the embedder pods would write, then the Job Complete.
	job := d.ownedJob(t, staleIndex, workload.JobKindBuild)
	rev := job.Labels[workload.LabelRevision]
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: job.Name}, &cm); err != nil {
		t.Fatalf("plan ConfigMap of Job %s: %v", job.Name, err)
	}
	var p plan.Build
	if err := json.Unmarshal([]byte(cm.Data[plan.File]), &p); err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: s.weaviate.HTTPAddr, GRPCHost: s.weaviate.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	const dims = 8
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: p.Collection, Revision: rev, Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	i := 0
	for doc, text := range docs {
		for o := range 2 {
			v := make([]float32, dims)
			v[(i+o)%dims] = 1
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: o * 32, End: o*32 + 32, Text: text, Vector: v})
		}
		i++
	}
	if err := store.Upsert(ctx, p.Collection, chunks); err != nil {
		t.Fatal(err)
	}
	// A real build outlasts a scrape interval: Prometheus sees both builds running first.
	for _, name := range []string{staleIndex, stalledIndex} {
		d.waitScraped(t, fmt.Sprintf(`ragops_index_builds_running{namespace=%q, index=%q} == 1`, d.ns, name))
	}
	res, _ := json.Marshal(plan.BuildResult{Shard: 0, Documents: int64(len(docs)), Chunks: int64(len(chunks)), Tokens: 600, Seconds: 2})
	testenv.FinishJob(t, d.cp.Client, job, string(res))
	d.waitIndex(t, staleIndex, "Ready on revision "+rev, func(idx *ragopsv1alpha1.Index) bool {
		return meta.IsStatusConditionTrue(idx.Status.Conditions, ragopsv1alpha1.ConditionReady) && idx.Status.ActiveRevision == rev
	})

	// archive's first build fails: the Job controller gives up (BackoffLimitExceeded).
	d.failJob(t, d.ownedJob(t, stalledIndex, workload.JobKindBuild))
	d.waitIndex(t, stalledIndex, "Stalled", func(idx *ragopsv1alpha1.Index) bool {
		return meta.IsStatusConditionTrue(idx.Status.Conditions, ragopsv1alpha1.ConditionStalled)
	})

	// A BM25 Evaluation of handbook's active revision.
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "handbook-bm25"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: staleIndex},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: queries.Name}, Split: "test"}}}}
	if err := c.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	res, _ = json.Marshal(plan.EvaluateResult{Queries: 1, Metrics: []plan.MetricsAtK{{K: 10, Recall: 1, NDCG: 0.6309, MRR: 0.5}}})
	testenv.FinishJob(t, d.cp.Client, d.ownedJob(t, ev.Name, ""), string(res))
	testenv.Eventually(t, 90*time.Second, "Evaluation Ready", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ev), ev)
		return err == nil && meta.IsStatusConditionTrue(ev.Status.Conditions, ragopsv1alpha1.ConditionReady) && ev.Status.RecallAt10 != nil, err
	})

	d.queryLoad(t)

	// handbook's Corpus lists a fourth document; the sync Job that would embed it never ends.
	var corpus ragopsv1alpha1.Corpus
	if err := c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: staleIndex}, &corpus); err != nil {
		t.Fatal(err)
	}
	listed := corpus.Status.Revision
	handbookDocs.Data["exchanges.md"] = "# Exchanges\nSizes can be exchanged in any store."
	if err := c.Update(ctx, handbookDocs); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 90*time.Second, "Corpus handbook listing the new document", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(&corpus), &corpus)
		return err == nil && corpus.Status.Revision != listed && corpus.Status.Documents == 4, err
	})
	d.ownedJob(t, staleIndex, workload.JobKindSync)
	d.waitIndex(t, staleIndex, "syncing while it serves", func(idx *ragopsv1alpha1.Index) bool {
		r := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionReconciling)
		return r != nil && r.Reason == controllers.ReasonSyncingCorpus && meta.IsStatusConditionTrue(idx.Status.Conditions, ragopsv1alpha1.ConditionReady)
	})
	return d
}

// queryLoad sends the model server what Weaviate and an application send it: query
// embeddings on Weaviate's query path and OpenAI embeddings requests.
func (d *demo) queryLoad(t *testing.T) {
	t.Helper()
	post := func(path, body string) {
		resp, err := http.Post(d.modelServerURL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %s (%v)", path, resp.Status, err)
		}
	}
	questions := []string{"how long can I return an item", "when does my order ship", "warranty on a laptop", "exchange a size"}
	for i := range 40 {
		q, _ := json.Marshal(map[string]string{"text": questions[i%len(questions)]})
		post("/query/vectors", string(q))
		if i%4 == 0 {
			in, _ := json.Marshal(map[string]any{"input": questions})
			post("/v1/embeddings", string(in))
		}
		time.Sleep(100 * time.Millisecond) // spread over a few scrapes
	}
}

// waitScraped waits until Prometheus answers query with a series.
func (d *demo) waitScraped(t *testing.T, query string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "Prometheus: "+query, func() (bool, error) {
		var r queryResult
		d.api(t, "/api/v1/query", url.Values{"query": {query}}, &r)
		return len(r.Result) > 0, nil
	})
}

// waitIndex waits until cond holds for the Index name.
func (d *demo) waitIndex(t *testing.T, name, what string, cond func(*ragopsv1alpha1.Index) bool) {
	t.Helper()
	var idx ragopsv1alpha1.Index
	testenv.Eventually(t, 90*time.Second, "Index "+name+" "+what, func() (bool, error) {
		if err := d.cp.Client.Get(context.Background(), client.ObjectKey{Namespace: d.ns, Name: name}, &idx); err != nil {
			return false, err
		}
		return cond(&idx), fmt.Errorf("conditions %+v", idx.Status.Conditions)
	})
}

// ownedJob waits for the one Job of kind (workload.JobKind*; empty: any) that the ragops
// object owner owns.
func (d *demo) ownedJob(t *testing.T, owner, kind string) *batchv1.Job {
	t.Helper()
	labels := client.MatchingLabels{workload.LabelOwner: owner}
	if kind != "" {
		labels[workload.LabelJobKind] = kind
	}
	var jobs batchv1.JobList
	testenv.Eventually(t, 90*time.Second, "the "+kind+" Job of "+owner, func() (bool, error) {
		err := d.cp.Client.List(context.Background(), &jobs, client.InNamespace(d.ns), labels)
		return err == nil && len(jobs.Items) == 1, fmt.Errorf("%d Jobs (%v)", len(jobs.Items), err)
	})
	return &jobs.Items[0]
}

// playModelServers waits for the model server Deployment the Indexes' serving asks for and
// plays the Deployment controller and the kubelet: every replica ready. (Their /meta is not
// reachable from the manager here; the model hash check then waits, as it does for a server
// that has not answered yet.)
func (d *demo) playModelServers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var deps appsv1.DeploymentList
	testenv.Eventually(t, 90*time.Second, "a model server Deployment", func() (bool, error) {
		err := d.cp.Client.List(ctx, &deps, client.InNamespace(d.ns))
		return err == nil && len(deps.Items) > 0, err
	})
	for i := range deps.Items {
		dep := &deps.Items[i]
		n := ptr.Deref(dep.Spec.Replicas, 1)
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
		if err := d.cp.Client.Status().Update(ctx, dep); err != nil {
			t.Fatalf("Deployment %s ready: %v", dep.Name, err)
		}
	}
}

// failJob marks the Job Failed the way the Job controller does once its backoff limit is
// reached.
func (d *demo) failJob(t *testing.T, job *batchv1.Job) {
	t.Helper()
	now := metav1.Now()
	startTime := metav1.NewTime(now.Add(-2 * time.Second))
	job.Status = batchv1.JobStatus{StartTime: &startTime, Failed: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
	}}
	if err := d.cp.Client.Status().Update(context.Background(), job); err != nil {
		t.Fatalf("fail Job %s: %v", job.Name, err)
	}
}
