package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// TestReplicaHealthOfTheActiveRevision builds an Index with replication factor 3 on a real
// three-node Weaviate, then kills one node: status.replication and the UnderReplicated
// condition follow the nodes API (3 of 3 replicas per shard, then fewer, then 3 again after
// the node returns with its data).
func TestReplicaHealthOfTheActiveRevision(t *testing.T) {
	cluster := weaviatetest.StartCluster(t)
	ns := newNamespace(t)
	ctx := context.Background()
	node1 := cluster.Nodes[0]
	fixture(t, ns, func(idx *ragopsv1alpha1.Index) {
		idx.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "http://" + node1.HTTPAddr, GRPCAddress: node1.GRPCAddr}
		idx.Spec.Replication = &ragopsv1alpha1.ReplicationSpec{Factor: 3}
	})

	// Play the build Job: write the fixture's chunks into the plan's collection, with the plan's
	// layout, on the cluster.
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		r := idx.Status.Revision
		for _, rev := range idx.Status.Revisions {
			if rev.Name == r && rev.Phase == ragopsv1alpha1.RevisionBuilding {
				return true, nil
			}
		}
		return false, nil
	})
	rev := idx.Status.Revision
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev))
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Replication == nil || p.Replication.Factor != 3 {
		t.Fatalf("plan replication %+v, want factor 3", p.Replication)
	}
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: node1.HTTPAddr, GRPCHost: node1.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	spec := vectorstore.CollectionSpec{Name: p.Collection, Revision: rev, Dimensions: dims}
	p.ApplyLayout(&spec)
	if err := store.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	for d, doc := range []string{"a.md", "b.md", "c.md"} {
		for o := range 2 {
			v := make([]float32, dims)
			v[(d+o)%dims] = 1
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: o * 10, End: o*10 + 10, Text: doc, Vector: v})
		}
	}
	if err := store.Upsert(ctx, p.Collection, chunks); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(plan.BuildResult{Shard: 0, Documents: 3, Chunks: int64(len(chunks)), Tokens: 600, Seconds: 2})
	finishJob(t, job, 0, string(res))
	waitActive(t, ns, "besluiten", rev)

	// health waits for status.replication and the UnderReplicated condition to show want
	// under-replicated shards; with touch, an annotation change makes the Index reconcile at
	// once rather than at its next minute.
	touches := 0
	health := func(underReplicated bool, reason string, touch bool) *ragopsv1alpha1.ReplicationStatus {
		t.Helper()
		var rs *ragopsv1alpha1.ReplicationStatus
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if touch {
				touches++
				ix := getIndex(t, ns, "besluiten")
				if ix.Annotations == nil {
					ix.Annotations = map[string]string{}
				}
				ix.Annotations["test.ragops.dev/touch"] = strconv.Itoa(touches)
				if err := env.Client.Update(ctx, ix); err != nil {
					t.Logf("touch: %v", err)
				}
			}
			time.Sleep(2 * time.Second)
			ix := getIndex(t, ns, "besluiten")
			c := condition(ix, ragopsv1alpha1.ConditionUnderReplicated)
			rs = ix.Status.Replication
			if rs != nil && c != nil && c.Reason == reason && (c.Status == metav1.ConditionTrue) == underReplicated &&
				(rs.UnderReplicatedShards > 0) == underReplicated {
				t.Logf("%s: %s; status.replication %+v", reason, c.Message, *rs)
				return rs
			}
			if time.Now().After(deadline) {
				t.Fatalf("no UnderReplicated=%v (%s) within 3 minutes: condition %+v, status.replication %+v", underReplicated, reason, c, rs)
			}
		}
	}
	// The first read follows the rollout by itself: nothing but status changed, and a status
	// change does not start a reconcile, so this fails unless the health step requeues.
	rs := health(false, controllers.ReasonReplicasHealthy, false)
	if rs.Factor != 3 || rs.Shards < 1 || rs.UnderReplicatedShards != 0 {
		t.Errorf("all nodes up: status.replication %+v, want factor 3 and no shard under-replicated", *rs)
	}

	if err := cluster.Nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	rs = health(true, controllers.ReasonShardsUnderReplicated, true)
	if rs.UnderReplicatedShards != rs.Shards {
		t.Errorf("node3 down with factor 3: %d of %d shards under-replicated, want all", rs.UnderReplicatedShards, rs.Shards)
	}
	if c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("a lost replica must not take the Index out of service: Ready %+v", c)
	}

	if err := cluster.Nodes[2].Restart(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	health(false, controllers.ReasonReplicasHealthy, true)
}
