package controllers

import (
	"context"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// Before any revision is active, an Index with replication still asks for a reconcile
// within the health interval: the rollout that activates a revision changes only status,
// which starts no reconcile (the Index watch passes generation and annotation changes), so
// without the requeue status.replication stayed empty after the first rollout until some
// other event (seen on a 3-node Weaviate through the operator: Ready for minutes, no
// status.replication). Without replication or sharding there is nothing to read.
func TestReplicaHealthRequeuesBeforeTheFirstRollout(t *testing.T) {
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: "127.0.0.1:1", GRPCHost: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	idx := &ragopsv1alpha1.Index{}
	idx.Spec.Replication = &ragopsv1alpha1.ReplicationSpec{Factor: 3}
	r := &IndexReconciler{}
	res, err := r.reconcileReplicaHealth(context.Background(), &indexState{idx: idx, store: store})
	if err != nil || res.Stop || res.RequeueAfter <= 0 || res.RequeueAfter > 2*replicaHealthInterval {
		t.Errorf("no active revision, factor 3: result %+v (err %v), want a requeue within %s", res, err, 2*replicaHealthInterval)
	}
	idx.Spec.Replication = nil
	if res, err := r.reconcileReplicaHealth(context.Background(), &indexState{idx: idx, store: store}); err != nil || res.RequeueAfter != 0 {
		t.Errorf("no replication: result %+v (err %v), want no requeue", res, err)
	}
}

// The manager's stores are wrapped for metrics; the wrapper must keep replica health, or
// the health step finds no healthStore and never reports status.replication (it did not:
// the feature worked only in tests that opened unwrapped stores).
func TestInstrumentedStoresKeepReplicaHealth(t *testing.T) {
	o := Options{}
	o.defaults()
	s, err := o.NewStore(ragopsv1alpha1.WeaviateSpec{URL: "http://127.0.0.1:1"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(healthStore); !ok {
		t.Fatalf("the default store %T does not read replica health", s)
	}
	plain := InstrumentStores(func(ragopsv1alpha1.WeaviateSpec, string, []byte) (Store, error) { return noHealthStore{}, nil })
	if s, _ := plain(ragopsv1alpha1.WeaviateSpec{}, "", nil); s == nil {
		t.Fatal("no store")
	} else if _, ok := s.(healthStore); ok {
		t.Errorf("a store without CollectionHealth gained it through the wrapper (%T)", s)
	}
}

// noHealthStore is a Store without CollectionHealth (its methods are never called).
type noHealthStore struct{ Store }
