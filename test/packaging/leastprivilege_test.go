package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

// saUser is the user name Kubernetes gives the manager's ServiceAccount.
const saUser = "system:serviceaccount:" + systemNS + ":" + serviceAccount

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNS, "system:authenticated"}

var (
	rbacOnce sync.Once
	rbacErr  error
)

// applyRBAC applies the rendered namespace, ServiceAccount, ClusterRoles, bindings and
// leader-election Role of config/default for real (server-side apply), once per run. Before
// it does, it checks that the impersonated ServiceAccount is refused, so a passing
// least-privilege test means the generated role granted what was used.
func applyRBAC(t *testing.T) {
	t.Helper()
	env := controlPlane(t)
	ctx := context.Background()
	rbacOnce.Do(func() {
		sa := impersonatedClient(t)
		err := sa.List(ctx, &ragopsv1alpha1.CorpusList{})
		if !apierrors.IsForbidden(err) {
			rbacErr = fmt.Errorf("before the RBAC is applied the ServiceAccount's list of Corpora returned %v, want Forbidden (is RBAC on?)", err)
			return
		}
		objs := render(t, "default")
		for _, kinds := range [][]string{{"Namespace"}, {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}} {
			for _, o := range objs {
				if !slices.Contains(kinds, o.GetKind()) {
					continue
				}
				if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("ragops-packaging-test"), client.ForceOwnership); err != nil {
					rbacErr = fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
					return
				}
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for rbacErr = sa.List(ctx, &ragopsv1alpha1.CorpusList{}); rbacErr != nil && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			rbacErr = sa.List(ctx, &ragopsv1alpha1.CorpusList{})
		}
	})
	if rbacErr != nil {
		t.Fatal(rbacErr)
	}
}

// impersonatedConfig is the admin config acting as the manager's ServiceAccount.
func impersonatedConfig(t *testing.T) *rest.Config {
	cfg := rest.CopyConfig(controlPlane(t).Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: saUser, Groups: saGroups}
	return cfg
}

func impersonatedClient(t *testing.T) client.Client {
	c, err := client.New(impersonatedConfig(t), client.Options{Scheme: cmd.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// forbiddenRecorder wraps a transport and records every 403 response.
type forbiddenRecorder struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (f *forbiddenRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
	}
	return resp, err
}

func (f *forbiddenRecorder) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// TestLeaderElectionRoleLetsTheManagerLead runs a manager with the rendered leader-election
// settings as the ServiceAccount and checks it takes the Lease without a single 403.
func TestLeaderElectionRoleLetsTheManagerLead(t *testing.T) {
	applyRBAC(t)
	cfg := impersonatedConfig(t)
	rec := &forbiddenRecorder{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec }
	const id = "ragops-manager.ragops.dev"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: cmd.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionID: id, LeaderElectionNamespace: systemNS, LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("manager stopped before it was elected: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("not elected within 60 s; 403s: %v", rec.list())
	}
	var lease coordinationv1.Lease
	if err := controlPlane(t).Client.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: id}, &lease); err != nil {
		t.Fatalf("Lease %s/%s: %v", systemNS, id, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease has no holder")
	}
	cancel()
	<-done
	if f := rec.list(); len(f) > 0 {
		t.Errorf("leader election was refused: %v", f)
	}
}

// managerProcess is the real `ragops manager` binary running as the ServiceAccount.
type managerProcess struct {
	metricsAddr, probeAddr string
	logPath                string
	cmd                    *exec.Cmd
}

// startManager runs the ragops binary with the rendered Deployment's arguments (listen
// addresses moved to free loopback ports) and a kubeconfig that impersonates the
// ServiceAccount, so every request it makes is authorised by the generated ClusterRole and
// the leader-election Role only. extra arguments follow the Deployment's.
func startManager(t *testing.T, extra ...string) *managerProcess {
	t.Helper()
	applyRBAC(t)
	bin := ragopsBinary(t)
	admin := controlPlane(t).Config
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{ClientCertificateData: admin.CertData, ClientKeyData: admin.KeyData, Impersonate: saUser, ImpersonateGroups: saGroups}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	var dep struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	find(t, render(t, "default"), "Deployment", managerName, &dep)
	ctr := dep.Spec.Template.Spec.Containers[0]
	m := &managerProcess{metricsAddr: testenv.FreeAddr(t), probeAddr: testenv.FreeAddr(t), logPath: filepath.Join(dir, "manager.log")}
	mgrCmd, _, _ := cmd.NewRoot().Find([]string{"manager"})
	var args []string
	for _, a := range ctr.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address"):
			a = "--metrics-bind-address=" + m.metricsAddr
		case strings.HasPrefix(a, "--health-probe-bind-address"):
			a = "--health-probe-bind-address=" + m.probeAddr
		case a == "--leader-elect" && mgrCmd.Flags().Lookup("leader-election-namespace") == nil:
			// Outside a pod the Lease namespace comes from a flag only; without the flag the
			// leader-election Role is checked by TestLeaderElectionRoleLetsTheManagerLead.
			t.Log("manager has no --leader-election-namespace flag: running without --leader-elect")
			continue
		case a == "--leader-elect":
			args = append(args, "--leader-election-namespace="+systemNS)
		}
		args = append(args, a)
	}
	args = append(args, "--progress-interval=1s")
	args = append(args, extra...)
	logf, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "RAGOPS_WORKER_IMAGE=ragops:packaging-test", "KUBECONFIG=" + kubeconfig}
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.cmd.Process.Signal(os.Interrupt)
		waited := make(chan struct{})
		go func() { _ = m.cmd.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(15 * time.Second):
			_ = m.cmd.Process.Kill()
			<-waited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(m.logPath)
			t.Logf("manager log (last 8 KiB):\n%s", tail(b, 8192))
		}
	})
	testenv.Eventually(t, 60*time.Second, "manager /readyz", func() (bool, error) {
		if m.cmd.ProcessState != nil {
			return false, fmt.Errorf("manager exited")
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get("http://" + m.probeAddr + p)
			if err != nil {
				return false, err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false, fmt.Errorf("%s: %s", p, resp.Status)
			}
		}
		return true, nil
	})
	return m
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// scrape fetches the manager's metrics endpoint (what `curl http://<addr>/metrics` shows)
// and parses the Prometheus text format.
func (m *managerProcess) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + m.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// value returns the value of the one series of a family whose labels include match, and
// whether there is one.
func value(mfs map[string]*dto.MetricFamily, name string, match map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func ready(o interface{ GetConditions() *[]metav1.Condition }, gen int64) bool {
	c := meta.FindStatusCondition(*o.GetConditions(), ragopsv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// ownedJob waits for the one Job a ragops object owns.
func ownedJob(t *testing.T, c client.Client, ns, owner string) *batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	testenv.Eventually(t, 60*time.Second, "the Job of "+owner, func() (bool, error) {
		err := c.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: owner})
		return err == nil && len(jobs.Items) == 1, err
	})
	return &jobs.Items[0]
}

// TestLeastPrivilegeFullReconcileAndMetrics runs the real manager as its ServiceAccount,
// with only the generated ClusterRole and the leader-election Role, through a full reconcile
// of every kind (a ConfigMap Corpus, a ChunkingStrategy, an Index built into a real Weaviate
// and aliased, an Evaluation with metrics, then the Index's deletion through its finalizer),
// and asserts that the API server refused none of its requests, that Events were recorded,
// and that its metrics endpoint shows controller-runtime's and the ragops metrics.
func TestLeastPrivilegeFullReconcileAndMetrics(t *testing.T) {
	w := weaviate(t)
	m := startManager(t)
	admin := controlPlane(t).Client
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lp-"}}
	if err := admin.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	docs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "docs"}, Data: map[string]string{
		"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.",
		"b.md": "# Motivering\nHet voorstel past binnen de begroting.",
		"c.md": "# Stemverhouding\n21 voor, 8 tegen.",
	}}
	queries := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "queries"}, Data: map[string]string{
		"queries.jsonl": `{"_id":"q1","text":"begroting"}` + "\n",
		"test.tsv":      "query-id\tcorpus-id\tscore\nq1\tb.md\t1\n",
	}}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
	strategy := &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "fixed"},
		Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}}
	idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "besluiten"},
		Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed"},
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://" + w.HTTPAddr, GRPCAddress: w.GRPCAddr},
		}}
	for _, o := range []client.Object{docs, queries, corpus, strategy, idx} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}

	testenv.Eventually(t, 60*time.Second, "Corpus Ready", func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(corpus), corpus)
		return err == nil && ready(corpus, corpus.Generation) && corpus.Status.Documents == 3, err
	})
	testenv.Eventually(t, 60*time.Second, "ChunkingStrategy Ready", func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(strategy), strategy)
		return err == nil && ready(strategy, strategy.Generation), err
	})

	// The build: the Job the controller created, chunks written where the embedder pods would
	// write them, the Job completed with the pods' result.
	var rev string
	testenv.Eventually(t, 60*time.Second, "a building revision", func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(idx), idx)
		rev = idx.Status.Revision
		return err == nil && rev != "" && len(idx.Status.Revisions) == 1, err
	})
	job := ownedJob(t, admin, ns.Name, idx.Name)
	// While the build Job runs, the manager exports its progress (the dashboard's panels).
	var building map[string]*dto.MetricFamily
	testenv.Eventually(t, 60*time.Second, "build progress on /metrics", func() (bool, error) {
		building = m.scrape(t)
		v, ok := value(building, "ragops_index_builds_running", map[string]string{"namespace": ns.Name, "index": idx.Name})
		return ok && v == 1, fmt.Errorf("ragops_index_builds_running = %v (present %v)", v, ok)
	})
	var cm corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: job.Name}, &cm); err != nil {
		t.Fatalf("plan ConfigMap of Job %s: %v", job.Name, err)
	}
	var p plan.Build
	if err := json.Unmarshal([]byte(cm.Data[plan.File]), &p); err != nil {
		t.Fatal(err)
	}
	store := mustStore(t)
	const dims = 8
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: p.Collection, Revision: rev, Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	for d, doc := range []string{"a.md", "b.md", "c.md"} {
		for o := 0; o < 2; o++ {
			v := make([]float32, dims)
			v[(d+o)%dims] = 1
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: o * 10, End: o*10 + 10, Text: docs.Data[doc], Vector: v})
		}
	}
	if err := store.Upsert(ctx, p.Collection, chunks); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(plan.BuildResult{Shard: 0, Documents: 3, Chunks: int64(len(chunks)), Tokens: 600, Seconds: 2})
	testenv.FinishJob(t, admin, job, string(res))
	testenv.Eventually(t, 60*time.Second, "Index Ready on revision "+rev, func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(idx), idx)
		return err == nil && ready(idx, idx.Generation) && idx.Status.ActiveRevision == rev, err
	})
	alias, _ := vectorstore.AliasName(ns.Name, idx.Name)
	if target, found, err := store.GetAlias(ctx, alias); err != nil || !found || target != p.Collection {
		t.Fatalf("alias %s -> %q (found %v, err %v), want %s", alias, target, found, err, p.Collection)
	}

	// An Evaluation of the active revision.
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bm25"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: idx.Name},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := admin.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	evJob := ownedJob(t, admin, ns.Name, ev.Name)
	res, _ = json.Marshal(plan.EvaluateResult{Queries: 1, Metrics: []plan.MetricsAtK{{K: 10, Recall: 1, NDCG: 0.6309, MRR: 0.5}}})
	testenv.FinishJob(t, admin, evJob, string(res))
	testenv.Eventually(t, 60*time.Second, "Evaluation Ready with metrics", func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(ev), ev)
		return err == nil && ready(ev, ev.Generation) && ev.Status.RecallAt10 != nil, err
	})
	if *ev.Status.RecallAt10 != 1 || ev.Status.NDCGAt10 == nil || *ev.Status.NDCGAt10 != 0.6309 {
		t.Errorf("Evaluation recall@10 %v nDCG@10 %v, want 1 and 0.6309", *ev.Status.RecallAt10, ev.Status.NDCGAt10)
	}

	// Condition transitions were recorded as Events (events.k8s.io, the manager's recorder).
	testenv.Eventually(t, 30*time.Second, "Events for the Index and the Evaluation", func() (bool, error) {
		var evs eventsv1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(ns.Name)); err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			seen[e.Regarding.Kind+"/"+e.Reason] = true
		}
		return seen["Index/"+controllers.ReasonActive] && seen["Evaluation/"+controllers.ReasonEvaluated], fmt.Errorf("events %v", seen)
	})

	// The metrics endpoint after the reconcile.
	mfs := m.scrape(t)
	// A reconcile without error ends as "success" or, when it asks to come back later (a serving
	// Index's drift check, a running Job's progress), "requeue_after".
	for _, c := range []string{"corpus", "chunkingstrategy", "index", "evaluation"} {
		done := 0.0
		for _, result := range []string{"success", "requeue_after"} {
			v, _ := value(mfs, "controller_runtime_reconcile_total", map[string]string{"controller": c, "result": result})
			done += v
		}
		if done < 1 {
			t.Errorf("controller_runtime_reconcile_total{controller=%q,result=success|requeue_after} = %v, want >= 1", c, done)
		}
	}
	il := map[string]string{"namespace": ns.Name, "index": idx.Name}
	for name, want := range map[string]float64{
		"ragops_index_documents_embedded_total": 3,
		"ragops_index_chunks_embedded_total":    6,
		"ragops_index_tokens_embedded_total":    600,
		"ragops_index_build_duration_seconds":   1, // one observation
	} {
		if v, ok := value(mfs, name, il); !ok || v != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, il, v, ok, want)
		}
	}
	if v, ok := value(mfs, "ragops_index_build_tokens_per_second", map[string]string{"namespace": ns.Name, "index": idx.Name, "revision": rev}); !ok || v != 300 {
		t.Errorf("ragops_index_build_tokens_per_second{revision=%s} = %v (present %v), want 300", rev, v, ok)
	}
	if v, ok := value(mfs, "ragops_index_active_revision_info", map[string]string{"namespace": ns.Name, "index": idx.Name, "revision": rev}); !ok || v != 1 {
		t.Errorf("ragops_index_active_revision_info{revision=%s} = %v (present %v), want 1", rev, v, ok)
	}
	assertDashboardMetricsExported(t, building, mfs)
	el := map[string]string{"namespace": ns.Name, "evaluation": ev.Name, "index": idx.Name, "mode": string(ragopsv1alpha1.ModeBM25), "k": "10"}
	for name, want := range map[string]float64{"ragops_evaluation_recall": 1, "ragops_evaluation_ndcg": 0.6309, "ragops_evaluation_mrr": 0.5} {
		if v, ok := value(mfs, name, el); !ok || v != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, el, v, ok, want)
		}
	}

	// Deletion through the finalizer: alias and collection removed, Index gone.
	if err := admin.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "Index deleted", func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(idx), &ragopsv1alpha1.Index{})
		return apierrors.IsNotFound(err), err
	})
	if _, found, err := store.GetAlias(ctx, alias); err != nil || found {
		t.Errorf("alias %s still there after deletion (err %v)", alias, err)
	}
	// A deleted Index leaves no series behind.
	mfs = m.scrape(t)
	for _, name := range []string{"ragops_index_documents_embedded_total", "ragops_index_build_tokens_per_second", "ragops_index_active_revision_info"} {
		if v, ok := value(mfs, name, il); ok {
			t.Errorf("%s%v = %v still exported after the Index was deleted", name, il, v)
		}
	}

	// No request of the manager was refused: client-go's own request counter has no 403,
	// and the log has no "forbidden".
	if v, ok := value(mfs, "rest_client_requests_total", map[string]string{"code": "403"}); ok && v > 0 {
		t.Errorf("the manager got %v responses with code 403", v)
	}
	if v, ok := value(mfs, "rest_client_requests_total", map[string]string{"code": "200"}); !ok || v < 10 {
		t.Errorf("rest_client_requests_total{code=200} = %v: the client metrics are not there to check", v)
	}
	logs, _ := os.ReadFile(m.logPath)
	for _, l := range strings.Split(string(logs), "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			t.Errorf("manager log: %s", l)
		}
	}
}
