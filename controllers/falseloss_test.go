package controllers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// Defect 11: one CollectionNotFound cleared the active revision and started a full,
// non-incremental build against the live collection (where an unreadable document would be
// deleted from what the alias serves).
func TestOneMissingReadDoesNotRebuildTheServedCollection(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	t.Cleanup(func() { falseMissing.Store(0) })

	// One read answers "missing" (the drift check runs every 2 s here): nothing happens.
	falseMissing.Store(1)
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		idx := getIndex(t, ns, "besluiten")
		if idx.Status.ActiveRevision != r1 {
			t.Fatalf("one missing read cleared the active revision (now %q)", idx.Status.ActiveRevision)
		}
		if c := condition(idx, ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %+v after one missing read", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if falseMissing.Load() != 0 {
		t.Fatalf("the drift check did not read the collection (falseMissing %d left)", falseMissing.Load())
	}
	var job batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten-" + r1 + "-build-2"}, &job); err == nil {
		t.Fatalf("a rebuild Job %s was started", job.Name)
	}
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("alias %q, want %q", got, c1)
	}

	// Every read answers "missing" though the collection is there: the loss is acted on, and
	// the rebuild into the served collection runs as a sync (unreadable documents keep their
	// chunks), never as a full build.
	falseMissing.Store(1000)
	rebuild := waitJob(t, ns, "besluiten-"+r1+"-build-2")
	falseMissing.Store(0)
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, rebuild.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Incremental || p.Collection != c1 {
		t.Fatalf("rebuild plan incremental %v collection %s, want an incremental run into %s", p.Incremental, p.Collection, c1)
	}
}
