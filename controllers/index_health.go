package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/vectorstore"
)

// Reasons of the UnderReplicated condition.
const (
	// ReasonShardsUnderReplicated: a shard of the active revision has fewer ready replicas
	// than the replication factor.
	ReasonShardsUnderReplicated = "ShardsUnderReplicated"
	// ReasonReplicasHealthy: every shard of the active revision has all its replicas ready.
	ReasonReplicasHealthy = "ReplicasHealthy"
)

// replicaHealthInterval is how often the replica health of an Index's active revision is
// read again (the nodes API asks every node).
const replicaHealthInterval = time.Minute

// healthStore is the part of a Store that reads replica health; vectorstore.Store has it,
// test fakes may not (then health is not reported).
type healthStore interface {
	CollectionHealth(ctx context.Context, collection string) (vectorstore.Health, error)
}

// reconcileReplicaHealth reads, for an Index with spec.replication or spec.sharding, the
// replication and shard health of the active revision's collection from Weaviate's nodes API into status.replication and sets the UnderReplicated
// condition: True while a shard has fewer ready replicas than the factor. It never stops the
// reconcile; a failed read is logged and leaves the last status (the nodes API fails while a
// node is down but not yet noticed by gossip). It looks again every minute, also while no
// revision is active yet: the rollout that activates one changes only status, which does
// not start a reconcile (the Index watch passes generation and annotation changes only).
func (r *IndexReconciler) reconcileReplicaHealth(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	hs, ok := st.store.(healthStore)
	if !ok || (idx.Spec.Replication == nil && idx.Spec.Sharding == nil) {
		idx.Status.Replication = nil
		return reconcile.Proceed.Remove(ragopsv1alpha1.ConditionUnderReplicated), nil
	}
	active := findRevision(idx, idx.Status.ActiveRevision)
	if active == nil || active.Collection == "" {
		idx.Status.Replication = nil
		return reconcile.ProceedFor(jitter(replicaHealthInterval)).Remove(ragopsv1alpha1.ConditionUnderReplicated), nil
	}
	h, err := hs.CollectionHealth(ctx, active.Collection)
	if err != nil {
		log.FromContext(ctx).Info("replica health not read", "collection", active.Collection, "error", err.Error())
		return reconcile.ProceedFor(jitter(replicaHealthInterval)), nil
	}
	rs := replicationStatus(h)
	now := metav1.Now()
	rs.UpdateTime = &now
	idx.Status.Replication = rs
	res := reconcile.ProceedFor(jitter(replicaHealthInterval))
	if rs.UnderReplicatedShards > 0 {
		return res.Set(ragopsv1alpha1.ConditionUnderReplicated, metav1.ConditionTrue, ReasonShardsUnderReplicated,
			underReplicatedMessage(active.Name, h)), nil
	}
	return res.Set(ragopsv1alpha1.ConditionUnderReplicated, metav1.ConditionFalse, ReasonReplicasHealthy,
		fmt.Sprintf("revision %s: %d shards with %d of %d replicas ready each", active.Name, rs.Shards, rs.Factor, rs.Factor)), nil
}

// replicationStatus converts the store's health to the Index status shape (without
// UpdateTime).
func replicationStatus(h vectorstore.Health) *ragopsv1alpha1.ReplicationStatus {
	under, missing := h.UnderReplicated()
	rs := &ragopsv1alpha1.ReplicationStatus{Factor: int32(h.Factor), Shards: int32(h.Shards),
		UnderReplicatedShards: int32(len(under) + missing)}
	for _, r := range h.Replicas {
		rs.Replicas = append(rs.Replicas, ragopsv1alpha1.ReplicaHealth{Shard: r.Shard, ReadyReplicas: int32(len(r.Nodes)), Nodes: r.Nodes})
	}
	return rs
}

// underReplicatedMessage names the under-replicated shards (at most 5) and the live nodes.
func underReplicatedMessage(revision string, h vectorstore.Health) string {
	under, missing := h.UnderReplicated()
	var parts []string
	for _, r := range h.Replicas {
		if len(r.Nodes) < h.Factor && len(parts) < 5 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", r.Shard, len(r.Nodes), h.Factor))
		}
	}
	msg := fmt.Sprintf("revision %s: %d of %d shards under-replicated (%s)", revision, len(under)+missing, h.Shards, strings.Join(parts, ", "))
	if missing > 0 {
		msg += fmt.Sprintf("; %d shards have no ready replica", missing)
	}
	return msg + fmt.Sprintf("; live nodes: %s", strings.Join(h.Nodes, ", "))
}

// writeConsistency is the consistency level of the Index's build writes ("" without
// spec.replication: Weaviate's default).
func writeConsistency(idx *ragopsv1alpha1.Index) ragopsv1alpha1.ConsistencyLevel {
	if r := idx.Spec.Replication; r != nil {
		return r.WriteConsistency
	}
	return ""
}

// readConsistency is the consistency level of Evaluation reads of the Index.
func readConsistency(idx *ragopsv1alpha1.Index) ragopsv1alpha1.ConsistencyLevel {
	if r := idx.Spec.Replication; r != nil {
		return r.ReadConsistency
	}
	return ""
}
