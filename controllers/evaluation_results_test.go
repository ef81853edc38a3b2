package controllers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// kubelet serves container logs the way a kubelet does (GET
// /containerLogs/<namespace>/<pod>/<container>, over TLS) for the pods bound to its Node, so
// that the real API server's pods/log, which the manager calls, reaches it.
type kubelet struct {
	node string
	mu   sync.Mutex
	logs map[string]string
	// reads counts the log reads served, by namespace/pod.
	reads map[string]*atomic.Int32
}

var (
	kubeletOnce sync.Once
	theKubelet  *kubelet
	kubeletErr  error
)

// resultsKubelet starts the test kubelet and registers its Node (once per test binary).
func resultsKubelet(t *testing.T) *kubelet {
	t.Helper()
	kubeletOnce.Do(func() { theKubelet, kubeletErr = startKubelet() })
	if kubeletErr != nil {
		t.Fatal(kubeletErr)
	}
	return theKubelet
}

func startKubelet() (*kubelet, error) {
	k := &kubelet{node: "results-kubelet", logs: map[string]string{}, reads: map[string]*atomic.Int32{}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/containerLogs/")
		parts := strings.Split(rest, "/")
		if !ok || len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		k.mu.Lock()
		log, found := k.logs[rest]
		if c := k.reads[parts[0]+"/"+parts[1]]; c != nil {
			c.Add(1)
		}
		k.mu.Unlock()
		if !found {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(log))
	}))
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.node}}
	ctx := context.Background()
	if err := env.Client.Create(ctx, node); err != nil {
		return nil, err
	}
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(p)}},
	}
	return k, env.Client.Status().Update(ctx, node)
}

// setLog makes log the log of the Job's pod (completion index 0) and its main container.
func (k *kubelet) setLog(job *batchv1.Job, log string) {
	k.setPodLog(job, job.Name+"-0", log)
}

// setPodLog makes log the log of pod's container named as the Job's main container.
func (k *kubelet) setPodLog(job *batchv1.Job, pod, log string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[job.Namespace+"/"+pod+"/"+job.Spec.Template.Spec.Containers[0].Name] = log
	if k.reads[job.Namespace+"/"+pod] == nil {
		k.reads[job.Namespace+"/"+pod] = &atomic.Int32{}
	}
}

// forget drops the logs of the Job's pod (a rotated log, a node gone).
func (k *kubelet) forget(job *batchv1.Job) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.logs, job.Namespace+"/"+job.Name+"-0/"+job.Spec.Template.Spec.Containers[0].Name)
}

func (k *kubelet) readsOf(job *batchv1.Job) int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.reads[job.Namespace+"/"+job.Name+"-0"]; c != nil {
		return c.Load()
	}
	return 0
}

// querySet returns per-query results of n queries whose recall@10 (and nDCG@10, MRR@10) are
// value(i), as a BM25 evaluation of the gate data set writes them.
func querySet(n int, value func(i int) float64) *results.Set {
	s := &results.Set{Version: results.Version, Dataset: "queries", Split: "test", Fingerprint: "gate-queries-v1", Mode: "BM25",
		Cutoffs: []int{10}, Metrics: []string{"mrr@10", "ndcg@10", "recall@10"}}
	for i := range n {
		v := value(i)
		rank := 0
		if v > 0 {
			rank = 1
		}
		s.Queries = append(s.Queries, results.Query{ID: fmt.Sprintf("q%05d", i), Text: fmt.Sprintf("vraag %d over het besluit", i),
			Values: []float64{v, v, v}, FirstRelevant: rank, Docs: []string{fmt.Sprintf("doc-%d", i)}})
	}
	return s
}

// finishWithResults plays an evaluate Job that logged set (as the Evaluation evaluation's)
// between progress lines and reported it in its termination message with its metrics and
// their intervals; it returns the reference it reported.
func finishWithResults(t *testing.T, job *batchv1.Job, evaluation string, set *results.Set) plan.ResultsRef {
	t.Helper()
	log, ref := framedLog(t, job.Namespace, evaluation, set)
	k := resultsKubelet(t)
	k.setLog(job, log)
	finishReporting(t, job, set, &ref)
	return ref
}

// framedLog returns the log of an evaluate pod that wrote set as the Evaluation evaluation's
// per-query results between progress lines, and the reference its result names.
func framedLog(t *testing.T, ns, evaluation string, set *results.Set) (string, plan.ResultsRef) {
	t.Helper()
	var ev ragopsv1alpha1.Evaluation
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: evaluation}, &ev); err != nil {
		t.Fatal(err)
	}
	set.Namespace, set.Evaluation, set.UID = ev.Namespace, ev.Name, string(ev.UID)
	blob, err := set.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	fmt.Fprintf(&log, "{\"level\":\"INFO\",\"msg\":\"evaluating\",\"queries\":%d}\n", len(set.Queries))
	if err := results.WriteFrame(&log, blob); err != nil {
		t.Fatal(err)
	}
	log.WriteString("{\"level\":\"INFO\",\"msg\":\"evaluated\"}\n")
	return log.String(), plan.ResultsRef{Queries: len(set.Queries), Bytes: len(blob), SHA256: sha256Hex(blob)}
}

// finishReporting completes the Job's pod (bound to the test kubelet) with a termination
// message of set's recall@10 and its interval, and ref.
func finishReporting(t *testing.T, job *batchv1.Job, set *results.Set, ref *plan.ResultsRef) {
	t.Helper()
	playPods(t, job, resultsKubelet(t).node, 0, resultMessage(t, set, ref))
	markJobFinished(t, job, metav1.Now(), 0, 1)
}

// resultMessage is the termination message of an evaluate pod that measured set and
// reported ref: set's recall@10 (also as nDCG and MRR) with its interval.
func resultMessage(t *testing.T, set *results.Set, ref *plan.ResultsRef) string {
	t.Helper()
	_, recall, err := set.Column("recall@10")
	if err != nil {
		t.Fatal(err)
	}
	iv, err := stats.OfMetric(recall, set.UID, "recall@10")
	if err != nil {
		t.Fatal(err)
	}
	iv = iv.Rounded()
	pi := plan.MetricInterval{StdErr: iv.StdErr, Lo: iv.Lo, Hi: iv.Hi}
	res, _ := json.Marshal(plan.EvaluateResult{Queries: len(set.Queries), Results: ref, Metrics: []plan.MetricsAtK{{K: 10,
		Recall: iv.Mean, NDCG: iv.Mean, MRR: iv.Mean, Intervals: map[string]plan.MetricInterval{"recall": pi, "ndcg": pi, "mrr": pi}}}})
	return string(res)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// getEvaluation reads an Evaluation from the API server.
func getEvaluation(t *testing.T, ns, name string) *ragopsv1alpha1.Evaluation {
	t.Helper()
	var ev ragopsv1alpha1.Evaluation
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// resultsCondition waits for the Evaluation's ResultsStored condition to have status and
// reason for its current generation and retry, and returns it.
func resultsCondition(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	eventually(t, 30*time.Second, fmt.Sprintf("Evaluation %s %s=%s (%s)", name, controllers.ConditionResultsStored, status, reason), func() (bool, error) {
		ev := getEvaluation(t, ns, name)
		c = condition(ev, controllers.ConditionResultsStored)
		if c == nil {
			return false, nil
		}
		return c.Status == status && c.Reason == reason && conditions.IsReady(ev) && ev.Status.LastHandledRetry == ev.Annotations[controllers.AnnotationRetry], fmt.Errorf("%s: %s", c.Reason, c.Message)
	})
	return c
}

// The evaluate pod's framed per-query results reach the Evaluation's results ConfigMap
// through the real API server's pods/log; a reconcile that finds them stored does not read
// the log again (a crash between the ConfigMap and the status write); a retry whose worker
// refuses its set over the bound deletes the earlier run's ConfigMap and names the count.
func TestEvaluationResultsCollectedFromThePodLog(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten-bm25"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	job := evaluationJob(t, ns, ev.Name)
	var p plan.Evaluate
	if err := json.Unmarshal([]byte(planOf(t, job.Namespace, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	got := getEvaluation(t, ns, ev.Name)
	if p.UID != string(got.UID) {
		t.Errorf("plan UID %q, want the Evaluation's %q (it seeds the intervals)", p.UID, got.UID)
	}
	set := querySet(40, func(i int) float64 { return float64(i%4) / 4 })
	ref := finishWithResults(t, job, ev.Name, set)
	c := resultsCondition(t, ns, ev.Name, metav1.ConditionTrue, controllers.ReasonResultsStored)
	if !strings.Contains(c.Message, "40 queries") {
		t.Errorf("ResultsStored message %q does not name the 40 queries", c.Message)
	}
	got = getEvaluation(t, ns, ev.Name)
	name := results.ConfigMapName(ev.Name)
	if r := got.Status.Results; r == nil || r.ConfigMap != name || r.SHA256 != ref.SHA256 || r.Bytes != int64(ref.Bytes) || r.Queries != 40 {
		t.Errorf("status.results %+v, want ConfigMap %s with %d bytes %s of 40 queries", got.Status.Results, name, ref.Bytes, ref.SHA256)
	}
	// recall@10 with its interval in status and in the Ready message.
	ready := condition(got, ragopsv1alpha1.ConditionReady)
	m := got.Status.Metrics[0]
	if m.RecallInterval == nil || m.RecallInterval.Lower >= m.Recall || m.RecallInterval.Upper <= m.Recall || m.RecallInterval.StdErr <= 0 {
		t.Errorf("status.metrics[0] %+v: want recall %v inside its interval with a standard error", m, m.Recall)
	} else if want := (stats.Interval{Mean: m.Recall, Lo: m.RecallInterval.Lower, Hi: m.RecallInterval.Upper}).PlusMinus(); !strings.Contains(ready.Message, "recall@10 "+want) {
		t.Errorf("Ready message %q, want recall@10 %s", ready.Message, want)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(&cm, got) || cm.Labels[workload.LabelOwner] != ev.Name || cm.Labels[workload.LabelRevision] != r1 {
		t.Errorf("ConfigMap owners %v labels %v, want controlled by the Evaluation, labelled with it and revision %s", cm.OwnerReferences, cm.Labels, r1)
	}
	back, err := results.Decode(cm.BinaryData[results.ConfigMapKey])
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Queries) != 40 || back.UID != string(got.UID) || back.Queries[3].Values[2] != 0.75 || back.Queries[3].ID != "q00003" {
		t.Errorf("stored set: %d queries, UID %q, q3 %+v; want the 40 played ones of this Evaluation", len(back.Queries), back.UID, back.Queries[3])
	}
	k := resultsKubelet(t)
	reads := k.readsOf(job)
	if reads == 0 {
		t.Fatal("the log was never read through pods/log")
	}

	// A manager that stopped after writing the ConfigMap but before the status: the next
	// reconcile finds the set stored and does not need the log (gone now).
	k.forget(job)
	base := got.DeepCopy()
	pending := metav1.Condition{Type: controllers.ConditionResultsStored, Status: metav1.ConditionUnknown, Reason: controllers.ReasonResultsCollecting,
		Message: "reading", ObservedGeneration: got.Generation, LastTransitionTime: metav1.Now()}
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == controllers.ConditionResultsStored {
			got.Status.Conditions[i] = pending
		}
	}
	if err := env.Client.Status().Patch(ctx, got, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	patchAnnotation(t, got, "example.com/touch", "1")
	eventually(t, 30*time.Second, "ResultsStored True again", func() (bool, error) {
		c := condition(getEvaluation(t, ns, ev.Name), controllers.ConditionResultsStored)
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
	if n := k.readsOf(job); n != reads {
		t.Errorf("the log was read %d more times, want none (the ConfigMap held the set)", n-reads)
	}

	// A retry whose worker refuses the set (over the bound): the earlier set goes, the
	// condition names the count.
	patchAnnotation(t, getEvaluation(t, ns, ev.Name), controllers.AnnotationRetry, "1")
	job2 := evaluationJob(t, ns, ev.Name)
	big := querySet(40, func(int) float64 { return 1 })
	big.UID = string(got.UID)
	finishReporting(t, job2, big, &plan.ResultsRef{Queries: 20000,
		Error: "results: per-query results over the size bound: 20000 queries take 1520311 bytes gzip-compressed, over the 1000000-byte bound"})
	c = resultsCondition(t, ns, ev.Name, metav1.ConditionFalse, controllers.ReasonResultsRefused)
	if !strings.Contains(c.Message, "20000 queries") {
		t.Errorf("ResultsStored message %q does not name the 20000 queries", c.Message)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); !apierrors.IsNotFound(err) {
		t.Errorf("the earlier run's ConfigMap %s is still there (err %v): a reader would take it for this run's", name, err)
	}
	if r := getEvaluation(t, ns, ev.Name).Status.Results; r != nil {
		t.Errorf("status.results %+v after a refusal, want none", r)
	}

	// A log that does not hold the frame its result names (a rotated log) ends in
	// ResultsUnavailable, not in a partial or another run's set.
	patchAnnotation(t, getEvaluation(t, ns, ev.Name), controllers.AnnotationRetry, "2")
	job3 := evaluationJob(t, ns, ev.Name)
	k.setLog(job3, "ragops-results begin bytes=10 sha256=00 lines=3\nragops-results 1 AAAA\n")
	finishReporting(t, job3, big, &plan.ResultsRef{Queries: 40, Bytes: ref.Bytes, SHA256: ref.SHA256})
	c = resultsCondition(t, ns, ev.Name, metav1.ConditionFalse, controllers.ReasonResultsUnavailable)
	if !strings.Contains(c.Message, ref.SHA256) || !strings.Contains(c.Message, controllers.AnnotationRetry) {
		t.Errorf("ResultsStored message %q does not name the missing frame and the retry", c.Message)
	}
}

// largeSet is n queries shaped like SciFact's at k=10: random 8-digit document IDs (as
// incompressible as real ones), varied texts and graded values.
func largeSet(n int) *results.Set {
	rng := rand.New(rand.NewPCG(37, 10000))
	s := querySet(n, func(i int) float64 { return float64(rng.IntN(11)) / 10 })
	for i := range s.Queries {
		q := &s.Queries[i]
		q.Text = fmt.Sprintf("%d %s of %d patients with %d mg", rng.IntN(1000), []string{"cohort", "trial", "meta-analysis", "case"}[rng.IntN(4)], rng.IntN(5000), rng.IntN(500))
		q.Docs = q.Docs[:0]
		for range results.DocsKept {
			q.Docs = append(q.Docs, strconv.Itoa(10000000+rng.IntN(90000000)))
		}
		q.FirstRelevant = rng.IntN(11)
		q.Values[0] = float64(rng.IntN(1000)) / 1000
	}
	return s
}

// 10,000 queries travel through the pod's log and pods/log into one ConfigMap: the bound
// holds them, and the API server stores the object.
func TestTenThousandQueriesReachTheConfigMap(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scifact-10k"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := env.Client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	ref := finishWithResults(t, evaluationJob(t, ns, ev.Name), ev.Name, largeSet(10000))
	resultsCondition(t, ns, ev.Name, metav1.ConditionTrue, controllers.ReasonResultsStored)
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: results.ConfigMapName(ev.Name)}, &cm); err != nil {
		t.Fatal(err)
	}
	blob := cm.BinaryData[results.ConfigMapKey]
	if sha256Hex(blob) != ref.SHA256 {
		t.Fatalf("stored %d bytes with SHA-256 %s, the worker sent %d bytes %s", len(blob), sha256Hex(blob), ref.Bytes, ref.SHA256)
	}
	t.Logf("10,000 queries: %d bytes gzip in the ConfigMap (%.1f%% of the %d-byte bound, %.1f a query)", len(blob), 100*float64(len(blob))/results.MaxBytes, results.MaxBytes, float64(len(blob))/10000)
	if len(blob) < results.MaxBytes/2 {
		t.Errorf("the set is %d bytes: too small to say the bound's object is stored", len(blob))
	}
}
