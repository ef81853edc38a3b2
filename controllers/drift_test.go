package controllers_test

// Issue 56: steady-state Index reconciles at 500 Indexes spent most of their time asking
// Weaviate whether the active collection and the alias were still there.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/vectorstore"
)

// storeCalls records the Store calls of the manager's reconcilers, as "Op argument".
type storeCalls struct {
	mu    sync.Mutex
	calls []string
}

func (c *storeCalls) add(op, arg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, op+" "+arg)
}

func (c *storeCalls) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

// about returns the recorded calls whose argument is one of args.
func (c *storeCalls) about(args ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, call := range c.calls {
		for _, a := range args {
			if strings.HasSuffix(call, " "+a) {
				out = append(out, call)
			}
		}
	}
	return slices.Clone(out)
}

// countedStore is a Store whose calls c records.
type countedStore struct {
	controllers.Store
	c *storeCalls
}

func (s countedStore) Unwrap() controllers.Store { return s.Store }

func (s countedStore) SetAlias(ctx context.Context, alias, collection string) error {
	s.c.add("SetAlias", alias)
	return s.Store.SetAlias(ctx, alias, collection)
}

func (s countedStore) GetAlias(ctx context.Context, alias string) (string, bool, error) {
	s.c.add("GetAlias", alias)
	return s.Store.GetAlias(ctx, alias)
}

func (s countedStore) DeleteAlias(ctx context.Context, alias string) error {
	s.c.add("DeleteAlias", alias)
	return s.Store.DeleteAlias(ctx, alias)
}

func (s countedStore) DeleteCollection(ctx context.Context, collection string) error {
	s.c.add("DeleteCollection", collection)
	return s.Store.DeleteCollection(ctx, collection)
}

func (s countedStore) CollectionExists(ctx context.Context, collection string) (bool, error) {
	s.c.add("CollectionExists", collection)
	return s.Store.CollectionExists(ctx, collection)
}

func (s countedStore) Count(ctx context.Context, collection string) (int, error) {
	s.c.add("Count", collection)
	return s.Store.Count(ctx, collection)
}

func (s countedStore) CountDocuments(ctx context.Context, collection string) (int, error) {
	s.c.add("CountDocuments", collection)
	return s.Store.CountDocuments(ctx, collection)
}

// An Index whose active revision was checked in Weaviate asks Weaviate nothing about its
// collection or alias on the reconciles that follow within DriftInterval (an annotation, a
// Job's event): before, each of them read the collection and the alias. The check itself
// still runs every DriftInterval (TestOneMissingReadDoesNotRebuildTheServedCollection and
// TestLostCollectionIsRebuiltAndServesAgain, at the suite's 2 s).
func TestSteadyIndexReconcileAsksWeaviateNothing(t *testing.T) {
	ns := newNamespace(t)
	calls := &storeCalls{}
	c := restartCountingWith(t, ns, func(o *controllers.Options) {
		o.DriftInterval = time.Hour
		next := o.NewStore
		o.NewStore = func(spec ragopsv1alpha1.WeaviateSpec, apiKey string, ca []byte) (controllers.Store, error) {
			s, err := next(spec, apiKey, ca)
			if err != nil {
				return nil, err
			}
			return countedStore{Store: s, c: calls}, nil
		}
	})
	fixture(t, ns, nil)
	rev, collection := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", rev)
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	// The reconcile after the alias moved checks the served revision once.
	waitReconciles(t, c, ns, []string{"besluiten"}, 1)
	if got := calls.about(alias, collection); !slices.Contains(got, "CollectionExists "+collection) || !slices.Contains(got, "GetAlias "+alias) {
		t.Fatalf("Weaviate calls until the first steady reconcile: %v; want the collection and the alias read", got)
	}

	calls.reset()
	waitReconciles(t, c, ns, []string{"besluiten"}, 3)
	if got := calls.about(alias, collection); len(got) > 0 {
		t.Errorf("steady-state Index reconciles within DriftInterval called Weaviate: %v; want none", got)
	}
	if got := aliasTarget(t, ns, "besluiten"); got != collection {
		t.Errorf("alias %s -> %q, want %q", alias, got, collection)
	}
}

// restartCountingWith is restartCounting with the controller options also changed by mutate.
func restartCountingWith(t *testing.T, ns string, mutate func(*controllers.Options)) *apiCounter {
	t.Helper()
	c := &apiCounter{ns: ns, indexReads: map[string]int{}}
	live, err := client.New(env.Config, client.Options{Scheme: cmd.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	stopManager()
	err = startManagerWithOptions(func(cl client.Client) client.Client { return countingClient{Client: cl, c: c} },
		func(o *controllers.Options) {
			o.APIReader = countingReader{Reader: live, c: c}
			mutate(o)
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopManager()
		if err := startManager(); err != nil {
			t.Errorf("restart the manager for the next tests: %v", err)
		}
	})
	return c
}

// countedModelServers counts the /meta reads of the model servers of one namespace.
type countedModelServers struct {
	controllers.ModelServerClient
	ns    string
	reads *atomic.Int32
}

func (m countedModelServers) ModelHash(ctx context.Context, endpoint string) (string, error) {
	if strings.Contains(endpoint, "."+m.ns+".svc") {
		m.reads.Add(1)
	}
	return m.ModelServerClient.ModelHash(ctx, endpoint)
}

// Two Indexes that share a ready model server read its /meta once between two changes of its
// Deployment, not on each of their reconciles; a change of the Deployment (its pods' readiness,
// as a restart brings) reads it again.
func TestSharedModelServerMetaIsReadOncePerChange(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	reads := &atomic.Int32{}
	c := restartCountingWith(t, ns, func(o *controllers.Options) {
		o.DriftInterval = time.Hour
		o.ModelServers = countedModelServers{ModelServerClient: o.ModelServers, ns: ns, reads: reads}
	})
	fakeModelHash(t, ns, "h1")
	fixture(t, ns, nil)
	_, second := strategyAndIndex(ns)
	second.Name = "tweede"
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	dep := modelServer(t, ns)
	servedBy(t, ns, "besluiten", dep.Name)
	servedBy(t, ns, "tweede", dep.Name)
	setReadyReplicas(t, dep, 1)
	names := []string{"besluiten", "tweede"}
	waitReconciles(t, c, ns, names, 1)
	first := reads.Load() // 1, or 2 when both reconciles missed the cache at once
	if first == 0 {
		t.Fatal("the shared server's /meta was not read once it was ready")
	}
	waitReconciles(t, c, ns, names, 3)
	if n := reads.Load(); n != first {
		t.Errorf("/meta reads after 6 more reconciles of the two Indexes: %d, want still %d", n, first)
	}

	setReadyReplicas(t, dep, 0)
	setReadyReplicas(t, dep, 1)
	eventually(t, 60*time.Second, "the changed Deployment in the manager's cache", func() (bool, error) {
		var cached appsv1.Deployment
		err := k8s.Get(ctx, client.ObjectKeyFromObject(dep), &cached)
		return err == nil && cached.ResourceVersion == dep.ResourceVersion, err
	})
	waitReconciles(t, c, ns, names, 1)
	if n := reads.Load(); n == first {
		t.Errorf("/meta was not read again after the server's Deployment changed (%d reads)", n)
	}
}
