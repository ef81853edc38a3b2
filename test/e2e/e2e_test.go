// Package e2e runs ragops end to end on the local cluster (hack/demo.sh with a 500-document
// SciFact subset): manifests applied -> embedder and evaluation Jobs run as local processes
// -> chunks in a real Weaviate -> recall in Evaluation status; then a strategy change builds a
// new revision and moves the alias, and deleting an Index deletes its collections; an
// Experiment's leaderboard equals independent Evaluations of its trials' Indexes. The tests
// share one cluster (upCluster), brought up once and taken down by TestMain.
//
// It needs root (the local node) and everything hack/demo.sh builds; with RAGOPS_REQUIRE_ALL=1
// a missing prerequisite fails the test instead of skipping it.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

const ns = "ragops-demo"

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// localCluster is the local cluster hack/demo.sh brings up once for every test of the package
// (each start costs minutes); TestMain takes it down.
type localCluster struct {
	root, state string
	env         []string
	k8s         client.Client
	store       *vectorstore.Store
	// started is set once `demo up` ran (down is then due, whether it failed or not); err
	// is the bring-up's failure.
	started bool
	err     error
}

var (
	local     localCluster
	localOnce sync.Once
)

// TestMain runs the tests, then takes down the cluster one of them brought up.
func TestMain(m *testing.M) {
	code := m.Run()
	if local.started {
		if out, err := local.demo("down"); err != nil {
			fmt.Fprintf(os.Stderr, "hack/demo.sh down: %v\n%s\n", err, tail(out, 6000))
		}
	}
	os.Exit(code)
}

// demo runs hack/demo.sh with args and the cluster's environment.
func (lc *localCluster) demo(args ...string) (string, error) {
	c := exec.Command(filepath.Join(lc.root, "hack", "demo.sh"), args...)
	c.Env, c.Dir = lc.env, lc.root
	out, err := c.CombinedOutput()
	return string(out), err
}

// upCluster returns the local cluster on a 500-document SciFact subset with the samples of
// testdata/samples applied and every Evaluation Ready, bringing it up on the first call.
func upCluster(t *testing.T) *localCluster {
	t.Helper()
	if os.Getuid() != 0 {
		skipOrFail(t, "the local node needs root")
	}
	localOnce.Do(func() {
		root := testenv.ModuleRoot()
		state := filepath.Join(root, ".cache", "e2e")
		local.root, local.state = root, state
		local.env = append(os.Environ(),
			"RAGOPS_DEMO_DOCS=500",
			"RAGOPS_DEMO_SAMPLES="+filepath.Join(root, "test", "e2e", "testdata", "samples"),
			"RAGOPS_DEMO_DIR="+state,
			"RAGOPS_DEMO_TIMEOUT=1800",
			// make demo's gated rollout: a change that passes, one refused, a revert (asserted below).
			"RAGOPS_DEMO_ROLLOUT="+filepath.Join(root, "config", "samples", "demo-rollout"),
			// TestModelChangeRolloutUnderNearTextLoad moves an Index from MiniLM to e5-small-v2.
			"RAGOPS_DEMO_MODELS=e5-small-v2",
			"LOCALCLUSTER_DIR="+filepath.Join(state, "cluster"),
			// Ports apart from `make demo`'s, so both can run on one machine.
			"RAGOPS_DEMO_WEAVIATE_PORT_BASE=28075",
			"RAGOPS_DEMO_MANAGER_PORT=28090",
			"LOCALCLUSTER_APISERVER_PORT=26443",
			"LOCALCLUSTER_ETCD_PORT=23890",
			"LOCALCLUSTER_KUBELET_PORT=20250",
			// Service ClusterIPs apart from make demo's 127.2.0.0/16 (the local node listens on them).
			"LOCALCLUSTER_SERVICE_CIDR=127.4.0.0/16",
		)
		local.started = true
		start := time.Now()
		out, err := local.demo("up")
		if err != nil {
			local.err = fmt.Errorf("hack/demo.sh up: %v\n%s", err, tail(out, 6000))
			return
		}
		t.Logf("hack/demo.sh up:\n%s", tail(out, 3000))
		t.Logf("apply -> every Evaluation Ready: %s", time.Since(start).Round(time.Second))
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "cluster", "kubeconfig"))
		if err != nil {
			local.err = err
			return
		}
		if local.k8s, err = client.New(cfg, client.Options{Scheme: cmd.Scheme()}); err != nil {
			local.err = err
			return
		}
		local.store, local.err = vectorstore.New(vectorstore.Config{HTTPHost: "127.0.0.1:28080", GRPCHost: "127.0.0.1:28079"})
	})
	if local.err != nil {
		t.Fatal(local.err)
	}
	return &local
}

func TestEndToEndOnSciFactSubset(t *testing.T) {
	lc := upCluster(t)
	k8s, store, state := lc.k8s, lc.store, lc.state
	ctx := context.Background()

	// Recall landed in status, computed by real pods on real data.
	var evals ragopsv1alpha1.EvaluationList
	if err := k8s.List(ctx, &evals, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evals.Items {
		if ev.Status.RecallAt10 == nil || ev.Status.Queries == 0 {
			t.Fatalf("%s: no recall in status: %+v", ev.Name, ev.Status)
		}
		t.Logf("%s: recall@10 %.4f nDCG@10 %.4f over %d queries", ev.Name, *ev.Status.RecallAt10, *ev.Status.NDCGAt10, ev.Status.Queries)
		assertInterval(t, &ev)
		if ev.Spec.IndexRef.Name == "rollout" {
			continue // the rollout's gating Evaluations: its 4-token chunks score low by design
		}
		// On 500 documents every method finds most judged abstracts.
		if *ev.Status.RecallAt10 < 0.5 {
			t.Errorf("%s: recall@10 %.4f is implausibly low", ev.Name, *ev.Status.RecallAt10)
		}
	}

	assertGatedRollout(t, getIndex(t, k8s, "rollout"))

	// Chunks are in Weaviate, as many as the status says.
	idx := getIndex(t, k8s, "recursive")
	r1 := idx.Status.ActiveRevision
	alias, _ := vectorstore.AliasName(ns, "recursive")
	c1 := findRev(idx, r1).Collection
	if n, err := store.Count(ctx, alias); err != nil || int64(n) != idx.Status.Chunks || n == 0 {
		t.Fatalf("alias %s holds %d chunks (err %v), status says %d", alias, n, err, idx.Status.Chunks)
	}
	if docs := findRev(idx, r1).Documents; docs != 500 {
		t.Errorf("revision %s embedded %d documents, want 500", r1, docs)
	}

	// A strategy change builds a new revision and moves the alias.
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "recursive"}, &cs); err != nil {
		t.Fatal(err)
	}
	cs.Spec.Size = 96
	if err := k8s.Update(ctx, &cs); err != nil {
		t.Fatal(err)
	}
	// One embedder pod of the new revision is SIGKILLed on the node after its shard has written
	// part of its chunks: the Job's retry must resume, not start the shard over.
	killedRev, killedPod, complete := killBuildPodMidShard(t, k8s, store, filepath.Join(state, "cluster", "node"), r1, 2)
	deadline := time.Now().Add(15 * time.Minute)
	for {
		idx = getIndex(t, k8s, "recursive")
		if idx.Status.ActiveRevision != r1 && idx.Status.ActiveRevision != "" {
			break
		}
		if c := meta(idx, ragopsv1alpha1.ConditionStalled); c != nil {
			t.Fatalf("Index stalled: %s", c.Message)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the alias did not move off %s: %+v", r1, idx.Status)
		}
		time.Sleep(5 * time.Second)
	}
	r2 := idx.Status.ActiveRevision
	if r2 != killedRev {
		t.Fatalf("active revision %s, the pod was killed in %s", r2, killedRev)
	}
	assertResumedAfterKill(t, k8s, store, filepath.Join(state, "cluster", "node"), findRev(idx, r2), killedPod, complete)
	target, _, err := store.GetAlias(ctx, alias)
	if err != nil || target != findRev(idx, r2).Collection {
		t.Fatalf("alias points at %q (err %v), want %s", target, err, findRev(idx, r2).Collection)
	}

	// Deleting the Index deletes its alias and collections.
	if err := k8s.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		var ix ragopsv1alpha1.Index
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "recursive"}, &ix); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Index not deleted: %+v", ix.Status.Conditions)
		}
		time.Sleep(time.Second)
	}
	for _, c := range []string{c1, findRev(idx, r2).Collection} {
		// CollectionExists asks the server: Collection would answer from the client's cache.
		if exists, err := store.CollectionExists(ctx, c); err != nil || exists {
			t.Errorf("collection %s survived the Index's deletion (err %v)", c, err)
		}
	}
	if _, found, _ := store.GetAlias(ctx, alias); found {
		t.Errorf("alias %s survived the Index's deletion", alias)
	}
}

// assertInterval checks that an Evaluation reports recall@10's 95% interval around its mean
// and says it in its Ready message ("0.812 ± 0.031").
func assertInterval(t *testing.T, ev *ragopsv1alpha1.Evaluation) {
	t.Helper()
	i := slices.IndexFunc(ev.Status.Metrics, func(m ragopsv1alpha1.MetricsAtK) bool { return m.K == 10 })
	if i < 0 || ev.Status.Metrics[i].RecallInterval == nil {
		t.Errorf("%s: no recall@10 interval in status.metrics: %+v", ev.Name, ev.Status.Metrics)
		return
	}
	m := ev.Status.Metrics[i]
	if iv := m.RecallInterval; iv.Lower > m.Recall || iv.Upper < m.Recall || iv.StdErr < 0 || iv.Upper-iv.Lower > 0.5 {
		t.Errorf("%s: recall@10 %.4f with interval %+v", ev.Name, m.Recall, *iv)
	}
	if c := apimeta.FindStatusCondition(ev.Status.Conditions, ragopsv1alpha1.ConditionReady); c == nil || !strings.Contains(c.Message, " ± ") {
		t.Errorf("%s: the Ready message does not give the interval: %+v", ev.Name, c)
	}
}

// assertGatedRollout checks the Index that hack/demo/rollout.sh walked through
// config/samples/demo-rollout: its first revision took the alias ungated; commit 1 (Sentence
// 128) passed the non-inferiority gate over the 300 paired queries and served; commit 2
// (4-token chunks) was refused as worse than the margin; the revert put the first revision
// back on the alias.
func assertGatedRollout(t *testing.T, idx *ragopsv1alpha1.Index) {
	t.Helper()
	for _, r := range idx.Status.Revisions {
		t.Logf("rollout revision %s: %s, gate recall@10 %.4f, served %v: %s %s", r.Name, r.Phase, ptr.Deref(r.GateRecall, math.NaN()), r.ServedTime != nil, r.GateMessage, r.Message)
	}
	if len(idx.Status.Revisions) != 3 {
		t.Fatalf("Index rollout has %d revisions, want 3 (first, passed, refused)", len(idx.Status.Revisions))
	}
	first := findRev(idx, idx.Status.ActiveRevision)
	if first.Phase != ragopsv1alpha1.RevisionActive || first.GateMessage != "" {
		t.Errorf("after the revert the alias serves %s (%s, gate %q), want the first, ungated revision", first.Name, first.Phase, first.GateMessage)
	}
	allowed := "the allowed " + stats.Signed(-0.02, 3) // maxRegression in 00-index.yaml
	var passed, refused int
	for _, r := range idx.Status.Revisions {
		switch {
		case r.Name == first.Name:
		case r.Phase == ragopsv1alpha1.RevisionRejected:
			refused++
			if !strings.Contains(r.Message, "paired over 300 gate queries") || !strings.Contains(r.Message, "is worse than "+allowed) {
				t.Errorf("refused revision %s: message %q, want a paired loss beyond -0.020 over 300 queries", r.Name, r.Message)
			}
		case r.ServedTime != nil:
			passed++
			if !strings.Contains(r.GateMessage, "paired over 300 gate queries") || !strings.Contains(r.GateMessage, "is within "+allowed) {
				t.Errorf("passed revision %s: gate message %q, want within -0.020 over 300 paired queries", r.Name, r.GateMessage)
			}
			if strings.Contains(r.GateMessage, "[0.000, 0.000]") {
				t.Errorf("passed revision %s: gate message %q: the change moved no query, so it tests nothing", r.Name, r.GateMessage)
			}
		default:
			t.Errorf("revision %s is %s and never served", r.Name, r.Phase)
		}
	}
	if passed != 1 || refused != 1 {
		t.Errorf("%d revisions passed the gate and %d were refused, want 1 and 1", passed, refused)
	}
}

// killBuildPodMidShard waits until a build pod of the Index "recursive"'s revision after r1 runs
// and its shard (of shards) has at least one document complete in the revision's collection,
// then SIGKILLs the pod's container (the shim's process group on the local node, as a node kill
// or OOM kill ends it: exit 137, no exit status). It returns the revision, the killed pod's name
// and the shard's documents complete just before the kill.
func killBuildPodMidShard(t *testing.T, k8s client.Client, store *vectorstore.Store, nodeDir, r1 string, shards int) (string, string, int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		idx := getIndex(t, k8s, "recursive")
		var rev ragopsv1alpha1.RevisionStatus
		for _, r := range idx.Status.Revisions {
			if r.Name != r1 && r.Collection != "" {
				rev = r
			}
		}
		if rev.Name == "" {
			continue
		}
		if n, err := store.Count(ctx, rev.Collection); err != nil || n == 0 {
			continue
		}
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{
			workload.LabelOwner: "recursive", workload.LabelRevision: rev.Name, "ragops.dev/job-kind": "build",
		}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			shard, err := strconv.Atoi(p.Annotations["batch.kubernetes.io/job-completion-index"])
			if p.Status.Phase != corev1.PodRunning || err != nil {
				continue
			}
			// Kill only a pod whose shard has documents complete in the collection.
			mine := func(id string) bool { return corpus.Shard(id, shard, shards) }
			states, err := store.DocumentStates(ctx, rev.Collection, 0, mine)
			complete := 0
			for _, d := range states {
				if d.Consistent() {
					complete++
				}
			}
			if err != nil || complete == 0 {
				continue
			}
			var st struct {
				Containers []struct {
					Running bool `json:"running"`
					Handle  struct {
						PID int `json:"pid"`
					} `json:"handle"`
				} `json:"containers"`
			}
			b, err := os.ReadFile(filepath.Join(nodeDir, "pods", string(p.UID), "state.json"))
			if err != nil || json.Unmarshal(b, &st) != nil || len(st.Containers) == 0 || !st.Containers[0].Running || st.Containers[0].Handle.PID <= 0 {
				continue
			}
			n, _ := store.Count(ctx, rev.Collection)
			if err := syscall.Kill(-st.Containers[0].Handle.PID, syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL pod %s (pid %d): %v", p.Name, st.Containers[0].Handle.PID, err)
			}
			t.Logf("SIGKILLed build pod %s (shard %d of %d, %d documents complete) of revision %s with %d chunks in %s",
				p.Name, shard, shards, complete, rev.Name, n, rev.Collection)
			return rev.Name, p.Name, complete
		}
	}
	t.Fatal("no running build pod of a new revision with documents complete within 10 minutes")
	return "", "", 0
}

// assertResumedAfterKill checks that the killed pod's shard was retried by a pod that skipped
// the documents already complete (its log line "resumed: skipped N documents already complete",
// complete <= N < the revision's documents) and that the collection holds exactly the
// revision's chunks of all its documents.
func assertResumedAfterKill(t *testing.T, k8s client.Client, store *vectorstore.Store, nodeDir string, rev ragopsv1alpha1.RevisionStatus, killed string, complete int) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{
		workload.LabelOwner: "recursive", workload.LabelRevision: rev.Name, "ragops.dev/job-kind": "build",
	}); err != nil {
		t.Fatal(err)
	}
	index := map[string]string{}
	for _, p := range pods.Items {
		index[p.Name] = p.Annotations["batch.kubernetes.io/job-completion-index"]
	}
	resumed := regexp.MustCompile(`resumed: skipped (\d+) documents already complete`)
	found := false
	for _, p := range pods.Items {
		if p.Name == killed || index[p.Name] != index[killed] || p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		logs, _ := filepath.Glob(filepath.Join(nodeDir, "pods", string(p.UID), "containers", "*", "*.log"))
		for _, f := range logs {
			b, _ := os.ReadFile(f)
			if m := resumed.FindSubmatch(b); m != nil {
				n, _ := strconv.Atoi(string(m[1]))
				t.Logf("retry pod %s of shard %s resumed %d documents", p.Name, index[p.Name], n)
				if n < complete || int64(n) >= rev.Documents {
					t.Errorf("retry pod %s resumed %d documents, want between %d (complete at the kill) and %d", p.Name, n, complete, rev.Documents-1)
				}
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no succeeded retry of shard %s (pod %s killed) logged a resume", index[killed], killed)
	}
	n, err := store.Count(ctx, rev.Collection)
	if err != nil || int64(n) != rev.Chunks {
		t.Errorf("collection %s holds %d chunks (err %v), the revision says %d", rev.Collection, n, err, rev.Chunks)
	}
	if d, err := store.CountDocuments(ctx, rev.Collection); err != nil || int64(d) != rev.Documents || d != 500 {
		t.Errorf("collection %s holds chunks of %d documents (err %v), the revision says %d, want 500", rev.Collection, d, err, rev.Documents)
	}
}

func getIndex(t *testing.T, c client.Client, name string) *ragopsv1alpha1.Index {
	t.Helper()
	var idx ragopsv1alpha1.Index
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &idx); err != nil {
		t.Fatal(err)
	}
	return &idx
}

func findRev(idx *ragopsv1alpha1.Index, name string) ragopsv1alpha1.RevisionStatus {
	for _, r := range idx.Status.Revisions {
		if r.Name == name {
			return r
		}
	}
	return ragopsv1alpha1.RevisionStatus{}
}

func meta(idx *ragopsv1alpha1.Index, typ string) *metav1.Condition {
	for i, c := range idx.Status.Conditions {
		if c.Type == typ && c.Status == metav1.ConditionTrue {
			return &idx.Status.Conditions[i]
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
