package vectorstore

import (
	"context"
	"testing"
	"time"
)

// Design gap of issue 32 ("counts come from aggregates with no consistency level"): Weaviate's
// Aggregate takes no consistency level (neither the GraphQL Aggregate nor the gRPC
// AggregateRequest of v1.37 has one), but it answers an unfiltered meta count, which Count
// sends, by asking every replica of every shard and taking the most common answer
// (Index.aggregateCount -> Finder.CountObjects at consistency ALL). Here node3's replicas lag:
// it is down while 60 of 120 chunks are written at QUORUM, and the collection has async
// replication off, so nothing repairs it. Counted through node3, Count must be all 120
// chunks, not node3's 60. CountDocuments is a filtered aggregate, which Weaviate answers from
// one replica per shard (the local one first): through node3 it counts node3's documents.
func TestClusterCountThroughALaggingReplicaIsExact(t *testing.T) {
	c := clusterFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const n, dims = 120, 16
	s := nodeStore(t, c, 0, Config{WriteConsistency: ConsistencyQuorum, BatchSize: 60, Concurrency: 1})
	coll := "RagopsTest_Cluster_Count_R1"
	spec := CollectionSpec{Name: coll, Revision: "r1", Dimensions: dims, Index: VectorIndex{Type: IndexFlat},
		Replication: Replication{Factor: 3, AsyncEnabled: false}, Shards: 1}
	if err := s.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.DeleteCollection(context.Background(), coll) })
	chunks := syntheticChunks(n, dims)
	if err := s.Upsert(ctx, coll, chunks[:n/2]); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Upsert(ctx, coll, chunks[n/2:]); err != nil {
		t.Fatalf("upsert with node3 down (QUORUM): %v", err)
	}
	if err := c.Nodes[2].Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	// node3's own replica lacks the chunks written while it was down.
	later := make([]string, 0, n/2)
	for _, ch := range chunks[n/2:] {
		later = append(later, ChunkID("r1", ch.DocID, ch.Ordinal).String())
	}
	present, _, err := idsOnNode(ctx, s, coll, "node3", later)
	if err != nil {
		t.Fatal(err)
	}
	if present != 0 {
		t.Fatalf("node3 holds %d of the %d chunks written while it was down: its replica does not lag, the test proves nothing", present, n/2)
	}
	via3 := nodeStore(t, c, 2, Config{})
	got, err := via3.Count(ctx, coll)
	if err != nil || got != n {
		t.Fatalf("Count through node3 (its replica holds %d) = %d, %v; want %d: the count read one replica", n/2, got, err, n)
	}
	// CountDocuments (a filtered aggregate) reads one replica: through node3 it has given 15
	// of 30 and, in a CI run, 0 of 30 (the replica it picked). Only logged: it is not exact
	// through a lagging replica, which is what its doc says.
	docs, err := via3.CountDocuments(ctx, coll)
	if err != nil {
		t.Errorf("CountDocuments through node3: %v", err)
	}
	t.Logf("through node3 (its replica holds %d of %d chunks): Count %d, CountDocuments %d of %d", n/2, n, got, docs, n/4)
}
