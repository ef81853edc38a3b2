package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
)

// TestModelServerTwoReplicasNoFailedQuery (issue 31, on the local cluster): the operator runs
// with --model-server-urls ClusterIP, so status.serving and the collections name the model
// server's ClusterIP (from the cluster's loopback service range), which the local node proxies
// to the ready model-server pods, each listening on its own pod address. `ragops query`
// answers through the alias and the model server; with two replicas and the PDB, 4 clients
// sending nearText through the alias see no failed query while one replica is evicted (the
// eviction of the other is refused by the PDB) and replaced.
func TestModelServerTwoReplicasNoFailedQuery(t *testing.T) {
	lc := upCluster(t)
	ctx := context.Background()
	// "sentence-late": TestEndToEndOnSciFactSubset deletes "recursive" when the package runs whole.
	const name = "sentence-late"
	idx := getIndex(t, lc.k8s, name)
	sv := idx.Status.Serving
	if sv == nil || sv.ReadyReplicas < 1 {
		t.Fatalf("status.serving %+v: want a ready model server", sv)
	}
	u, err := url.Parse(sv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err != nil || !ip.IsLoopback() || u.Port() != fmt.Sprint(specs.Port) {
		t.Fatalf("status.serving.endpoint %s: want http://<loopback ClusterIP>:%d", sv.Endpoint, specs.Port)
	}
	queriesBefore := servedQueries(t, sv.Endpoint)

	cmd := exec.Command(filepath.Join(lc.root, "bin", "ragops"), "query", "-n", ns, "--index", name, "-k", "3", "vitamin D deficiency and bone density")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(lc.state, "cluster", "kubeconfig"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "RANK") || strings.Count(string(out), "\n") < 4 {
		t.Fatalf("ragops query: %v\n%s", err, out)
	}
	t.Logf("ragops query:\n%s", out)
	if n := servedQueries(t, sv.Endpoint); n <= queriesBefore {
		t.Errorf("the model server embedded %v query texts before ragops query and %v after: want more", queriesBefore, n)
	}

	// Two replicas: the PDB comes, both pods listen on port 8080 of their own addresses.
	idx.Spec.Serving.Replicas = 2
	if err := lc.k8s.Update(ctx, idx); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	var pdb policyv1.PodDisruptionBudget
	waitUntil(t, 3*time.Minute, "2 ready model-server replicas and a PDB allowing 1 disruption", func() bool {
		return lc.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sv.Deployment}, &dep) == nil && dep.Status.ReadyReplicas == 2 &&
			lc.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sv.Deployment}, &pdb) == nil && pdb.Status.DisruptionsAllowed == 1
	})
	var pods corev1.PodList
	if err := lc.k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{specs.LabelServer: sv.Deployment}); err != nil {
		t.Fatal(err)
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	if len(running) != 2 || running[0].Status.PodIP == running[1].Status.PodIP {
		t.Fatalf("%d running model-server pods (want 2 on two addresses)", len(running))
	}

	alias, err := vectorstore.AliasName(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ok, failed := 0, map[string]int{}
	stop := time.Now().Add(25 * time.Second)
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				err := nearText(alias, fmt.Sprintf("protein folding and disease %d %d", c, i))
				mu.Lock()
				if err != nil {
					failed[err.Error()]++
				} else {
					ok++
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(5 * time.Second)
	evict := func(p corev1.Pod) error {
		return lc.k8s.SubResource("eviction").Create(ctx, &p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
	}
	if err := evict(running[0]); err != nil {
		t.Errorf("evict %s: %v, want it allowed (1 disruption)", running[0].Name, err)
	}
	if err := evict(running[1]); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evict %s right after: %v, want 429 (the PDB)", running[1].Name, err)
	}
	wg.Wait()
	total := 0
	for _, n := range failed {
		total += n
	}
	t.Logf("nearText through alias %s while one of two replicas is evicted: %d succeeded, %d failed %v", alias, ok, total, failed)
	if total != 0 || ok < 50 {
		t.Errorf("%d queries failed (%v), %d succeeded: want none failed (and at least 50 sent)", total, failed, ok)
	}
	waitUntil(t, 3*time.Minute, "2 ready replicas again", func() bool {
		return lc.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sv.Deployment}, &dep) == nil && dep.Status.ReadyReplicas == 2
	})
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(time.Second)
	}
}

// nearText sends one nearText query (limit 3) through the alias to Weaviate's GraphQL API and
// fails unless it returns 3 objects without errors.
func nearText(alias, text string) error {
	q := fmt.Sprintf(`{ Get { %s(nearText: {concepts: [%q]}, limit: 3) { _additional { distance } } } }`, alias, text)
	body, _ := json.Marshal(map[string]string{"query": q})
	cl := &http.Client{Timeout: 15 * time.Second}
	resp, err := cl.Post("http://127.0.0.1:28080/v1/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data   map[string]map[string][]json.RawMessage `json:"data"`
		Errors []struct{ Message string }              `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		msg := r.Errors[0].Message
		if len(msg) > 120 {
			msg = msg[:120]
		}
		return fmt.Errorf("graphql: %s", msg)
	}
	if n := len(r.Data["Get"][alias]); n != 3 {
		return fmt.Errorf("%d results, want 3", n)
	}
	return nil
}

// servedQueries reads how many query texts the model server behind endpoint has embedded
// (ragops_serve_texts_total{task="query"} of one replica, through the Service).
func servedQueries(t *testing.T, endpoint string) float64 {
	t.Helper()
	resp, err := http.Get(endpoint + "/metrics")
	if err != nil {
		t.Fatalf("model server metrics through the Service: %v", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	for _, line := range strings.Split(buf.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, `ragops_serve_texts_total{task="query"} `); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return 0
}
