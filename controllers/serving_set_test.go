package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
)

// apiCounter counts, for one namespace, what the suite's manager asks the API server: LISTs
// through Options.APIReader (uncached), successful writes of model server objects, and
// cached Gets of each Index (one at the start of every Index reconcile).
type apiCounter struct {
	ns         string
	mu         sync.Mutex
	lists      []string       // "Kind" of each uncached LIST in ns
	writes     []string       // "verb Kind name" of each successful model server write in ns
	indexReads map[string]int // Index name -> cached Gets
}

func (c *apiCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists, c.writes, c.indexReads = nil, nil, map[string]int{}
}

func (c *apiCounter) snapshot() (lists, writes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lists...), append([]string(nil), c.writes...)
}

func (c *apiCounter) reads(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.indexReads[name]
}

// isServerObject reports whether o is a model server object of the counted namespace.
func (c *apiCounter) isServerObject(o client.Object) bool {
	switch o.(type) {
	case *appsv1.Deployment, *corev1.Service, *networkingv1.NetworkPolicy, *policyv1.PodDisruptionBudget:
		return o.GetNamespace() == c.ns && strings.HasPrefix(o.GetName(), "ragops-serve-")
	}
	return false
}

func (c *apiCounter) wrote(verb string, o client.Object, err error) error {
	if err == nil && c.isServerObject(o) {
		c.mu.Lock()
		c.writes = append(c.writes, fmt.Sprintf("%s %T %s", verb, o, o.GetName()))
		c.mu.Unlock()
	}
	return err
}

// countingClient is the manager's client, counted by c.
type countingClient struct {
	client.Client
	c *apiCounter
}

func (w countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*ragopsv1alpha1.Index); ok && key.Namespace == w.c.ns {
		w.c.mu.Lock()
		w.c.indexReads[key.Name]++
		w.c.mu.Unlock()
	}
	return w.Client.Get(ctx, key, obj, opts...)
}

func (w countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return w.c.wrote("create", obj, w.Client.Create(ctx, obj, opts...))
}

func (w countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return w.c.wrote("update", obj, w.Client.Update(ctx, obj, opts...))
}

func (w countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return w.c.wrote("patch", obj, w.Client.Patch(ctx, obj, patch, opts...))
}

func (w countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return w.c.wrote("delete", obj, w.Client.Delete(ctx, obj, opts...))
}

// countingReader is the manager's Options.APIReader (reads that bypass the cache), counted
// by c.
type countingReader struct {
	client.Reader
	c *apiCounter
}

func (r countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.Namespace == r.c.ns || lo.Namespace == "" {
		r.c.mu.Lock()
		r.c.lists = append(r.c.lists, strings.TrimSuffix(fmt.Sprintf("%T", list), "List"))
		r.c.mu.Unlock()
	}
	return r.Reader.List(ctx, list, opts...)
}

// restartCounting replaces the suite's manager with one whose API calls for namespace ns are
// counted, and puts a plain one back when the test ends.
func restartCounting(t *testing.T, ns string) *apiCounter {
	t.Helper()
	return restartCountingWith(t, ns, func(*controllers.Options) {})
}

// waitReconciles waits until each named Index of the counted namespace has been reconciled
// n more times (the reconcile reads its Index first; the next one starts after the last
// ended, so n-1 of them have finished).
func waitReconciles(t *testing.T, c *apiCounter, ns string, names []string, n int) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		from := c.reads(name)
		// An annotation change lets a reconcile through at once (DriftInterval brings one too).
		for i := 0; i < n; i++ {
			ix := getIndex(t, ns, name)
			patch := client.MergeFrom(ix.DeepCopy())
			if ix.Annotations == nil {
				ix.Annotations = map[string]string{}
			}
			ix.Annotations["test.ragops.dev/touch"] = fmt.Sprint(time.Now().UnixNano())
			if err := env.Client.Patch(ctx, ix, patch); err != nil {
				t.Fatal(err)
			}
			eventually(t, 60*time.Second, fmt.Sprintf("reconcile %d of Index %s", i+1, name), func() (bool, error) {
				return c.reads(name) > from+i, nil
			})
		}
		eventually(t, 60*time.Second, fmt.Sprintf("one more reconcile of Index %s", name), func() (bool, error) {
			return c.reads(name) > from+n, nil
		})
	}
}

// servedBy waits until Index name of ns reports model server dep in status.serving.
func servedBy(t *testing.T, ns, name, dep string) {
	t.Helper()
	eventually(t, 60*time.Second, "Index "+name+" served by "+dep, func() (bool, error) {
		s := getIndex(t, ns, name).Status.Serving
		return s != nil && s.Deployment == dep, nil
	})
}

// Issue 56: an Index reconcile in steady state reads its model server from the manager's
// cache: no LIST goes to the API server (before, every reconcile listed the namespace's
// Deployments uncached) and nothing of the shared server is written.
func TestSteadyIndexReconcileListsNothingUncached(t *testing.T) {
	ns := newNamespace(t)
	c := restartCounting(t, ns)
	fixture(t, ns, nil)
	rev, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", rev)
	dep := modelServer(t, ns)
	servedBy(t, ns, "besluiten", dep.Name)
	c.reset()
	waitReconciles(t, c, ns, []string{"besluiten"}, 3)
	lists, writes := c.snapshot()
	if len(lists) > 0 {
		t.Errorf("steady-state Index reconciles listed from the API server: %v; want none", lists)
	}
	if len(writes) > 0 {
		t.Errorf("steady-state Index reconciles wrote the model server: %v; want nothing", writes)
	}
}

// Issue 56: a third Index that shares the model server changes the shared objects once (the
// Deployment's count of Indexes) instead of rewriting each object's owner list, reconciles of
// the three afterwards write nothing, and no object carries an owner reference per Index.
func TestThirdIndexChangesTheSharedServerOnce(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	c := restartCounting(t, ns)
	fixture(t, ns, nil)
	_, second := strategyAndIndex(ns)
	second.Name = "tweede"
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	dep := modelServer(t, ns)
	servedBy(t, ns, "besluiten", dep.Name)
	servedBy(t, ns, "tweede", dep.Name)
	waitReconciles(t, c, ns, []string{"besluiten", "tweede"}, 1)

	c.reset()
	_, third := strategyAndIndex(ns)
	third.Name = "derde"
	if err := env.Client.Create(ctx, third); err != nil {
		t.Fatal(err)
	}
	servedBy(t, ns, "derde", dep.Name)
	eventually(t, 60*time.Second, "the shared server changed for the third Index", func() (bool, error) {
		_, writes := c.snapshot()
		return len(writes) > 0, nil
	})
	waitReconciles(t, c, ns, []string{"besluiten", "tweede", "derde"}, 2)
	_, writes := c.snapshot()
	if want := "update *v1.Deployment " + dep.Name; len(writes) != 1 || writes[0] != want {
		t.Errorf("writes of the shared model server after a third Index: %v; want one, %q", writes, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Annotations["ragops.dev/indexes"]; got != "3" {
		t.Errorf("Deployment annotation ragops.dev/indexes=%q, want 3", got)
	}
	for _, o := range []client.Object{dep, &corev1.Service{}, &networkingv1.NetworkPolicy{}} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), o); err != nil {
			t.Fatal(err)
		}
		if refs := o.GetOwnerReferences(); len(refs) > 0 {
			t.Errorf("%T %s has owner references %v; want none (no owner reference per Index)", o, o.GetName(), refs)
		}
	}
}

// Issue 56: the shared model server carries no owner reference to its Indexes, yet deleting
// every Index that needs it deletes its Deployment, Service and NetworkPolicy.
func TestDeletingEveryIndexDeletesTheModelServer(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	_, second := strategyAndIndex(ns)
	second.Name = "tweede"
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	dep := modelServer(t, ns)
	servedBy(t, ns, "besluiten", dep.Name)
	servedBy(t, ns, "tweede", dep.Name)
	for _, name := range []string{"besluiten", "tweede"} {
		if err := env.Client.Delete(ctx, getIndex(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "both Indexes gone", func() (bool, error) {
		var list ragopsv1alpha1.IndexList
		err := env.Client.List(ctx, &list, client.InNamespace(ns))
		return err == nil && len(list.Items) == 0, err
	})
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}} {
		eventually(t, 60*time.Second, fmt.Sprintf("%T deleted", o), func() (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), o)
			return apierrors.IsNotFound(err), nil
		})
	}
}

// Issue 56: a model server whose Indexes went while no manager ran (labelled, no owner, no
// Index in its namespace) is collected without any Index event: the manager reconciles every
// namespace that holds model server objects.
func TestModelServerWithoutIndexesIsCollected(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	labels := map[string]string{"app.kubernetes.io/managed-by": "ragops", "app.kubernetes.io/component": "model-server", "ragops.dev/model-server": "ragops-serve-0000000000"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ragops-serve-0000000000", Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "serve", Image: "ragops:test"}}},
		}}}
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Deployment no Index needs deleted", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{})
		return apierrors.IsNotFound(err), nil
	})
}
