package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// One three-node cluster for the package's cluster tests (each test uses its own
// collections and leaves every node running when it ends). Async replication compares replicas
// every second instead of every 30 s and propagates objects older than 1 s (instead of 30 s),
// so a returning node is repaired within seconds.
var sharedCluster struct {
	once sync.Once
	c    *weaviatetest.Cluster
	err  error
}

func clusterFor(t *testing.T) *weaviatetest.Cluster {
	t.Helper()
	bin := weaviatetest.Require(t)
	sharedCluster.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sharedCluster.c, sharedCluster.err = weaviatetest.LaunchCluster(ctx, weaviatetest.ClusterOptions{
			Options: weaviatetest.Options{Binary: bin, ExtraEnv: []string{
				"ASYNC_REPLICATION_FREQUENCY=1s", "ASYNC_REPLICATION_FREQUENCY_WHILE_PROPAGATING=1s",
				// Objects are propagated once they are this old (default 30 s).
				"ASYNC_REPLICATION_PROPAGATION_DELAY=1s",
				// The nodes API's per-replica object counts are read from flushed segments: flush
				// idle memtables after 2 s instead of 60 s so they follow writes and repairs.
				"PERSISTENCE_MEMTABLES_FLUSH_IDLE_AFTER_SECONDS=2",
			}}})
	})
	if sharedCluster.err != nil {
		t.Fatalf("start weaviate cluster: %v", sharedCluster.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range sharedCluster.c.Nodes {
				t.Logf("%s log tail:\n%s", sharedCluster.c.Names[i], s.LogTail())
			}
		}
	})
	return sharedCluster.c
}

// nodeStore is a Store talking to node i of the cluster.
func nodeStore(t *testing.T, c *weaviatetest.Cluster, i int, cfg Config) *Store {
	t.Helper()
	return storeFor(t, c.Nodes[i], cfg)
}

// syntheticChunks returns n chunks of document "doc-<i/4>" (4 chunks a document) with
// deterministic unit vectors of dims dimensions.
func syntheticChunks(n, dims int) []Chunk {
	out := make([]Chunk, n)
	for i := range out {
		doc := fmt.Sprintf("doc-%d", i/4)
		out[i] = Chunk{DocID: doc, Ordinal: i % 4, Start: 0, End: 10, Text: fmt.Sprintf("chunk %d of %s", i%4, doc),
			Vector: unitVector(fmt.Sprintf("c%d", i), dims)}
	}
	return out
}

// idsOnNode returns which of ids node holds in its own replica of collection (GET
// /v1/objects/{class}/{id}?node_name=node, which reads that node's local shard only).
func idsOnNode(ctx context.Context, s *Store, collection, node string, ids []string) (present int, missing []string, err error) {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, id := range ids {
		g.Go(func() error {
			objs, err := s.Client().Data().ObjectsGetter().WithClassName(collection).WithID(id).WithNodeName(node).Do(gctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && len(objs) == 1 && string(objs[0].ID) == id:
				present++
			case err == nil || isNotFound(err):
				missing = append(missing, id)
			default:
				return fmt.Errorf("get %s on %s: %w", id, node, err)
			}
			return nil
		})
	}
	err = g.Wait()
	return present, missing, err
}

// readAll reads every object of ids at consistency ALL, which repairs replicas that miss it.
func readAll(ctx context.Context, s *Store, collection string, ids []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, id := range ids {
		g.Go(func() error {
			_, err := s.Client().Data().ObjectsGetter().WithClassName(collection).WithID(id).WithConsistencyLevel(ConsistencyAll).Do(gctx)
			if err != nil {
				return fmt.Errorf("read %s at ALL: %w", id, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// waitRepaired waits until every live node reports, summed over its replicas, want objects of
// collection (the nodes API's per-replica object counts), or the timeout passes; it returns
// the last health read. On timeout it fails the test, unless soft: then it returns ok false.
func waitRepaired(ctx context.Context, t *testing.T, s *Store, collection string, nodes int, want int64, timeout time.Duration, soft bool) (_ Health, ok bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var h Health
	var err error
	var perNode map[string]int64
	for {
		h, err = s.CollectionHealth(ctx, collection)
		if err == nil && len(h.Nodes) == nodes {
			perNode = map[string]int64{}
			for _, r := range h.Replicas {
				for n, c := range r.Objects {
					perNode[n] += c
				}
			}
			ok := len(perNode) == nodes
			for _, c := range perNode {
				ok = ok && c == want
			}
			if ok {
				return h, true
			}
			if os.Getenv("RAGOPS_DEBUG_REPAIR") != "" {
				t.Logf("%s objects per node %v", time.Now().Format("15:04:05"), perNode)
			}
		}
		if time.Now().After(deadline) {
			if soft {
				t.Logf("collection %s not repaired after %s: objects per node %v, want %d each", collection, timeout, perNode, want)
				return h, false
			}
			t.Fatalf("collection %s not repaired after %s: objects per node %v, want %d each; health %s, err %v", collection, timeout, perNode, want, h, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestClusterQuorumWritesSurviveNodeLoss writes 1,000 chunks with replication factor 3 and
// write consistency QUORUM through node1 in batches of 100 while node3 is SIGKILLed after the
// first 300 (600 of the chunks are written after node3 has exited): every Upsert call must succeed (QUORUM = 2 of 3 acknowledge). Then node3 comes
// back on its data folder and async replication repairs it; the test asserts each node holds
// exactly 1,000 objects (nodes API per-replica counts) and every one of the 1,000 chunk IDs
// (read from each node's own replica), and that health reports 3 of 3 replicas per shard
// again. While node3 was down, health must have reported every shard under-replicated with
// 2 live replicas.
func TestClusterQuorumWritesSurviveNodeLoss(t *testing.T) {
	c := clusterFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const n, dims = 1000, 64
	s := nodeStore(t, c, 0, Config{WriteConsistency: ConsistencyQuorum, ReadConsistency: ConsistencyQuorum, BatchSize: 100, Concurrency: 1})
	coll := "RagopsTest_Cluster_Quorum_R1"
	spec := CollectionSpec{Name: coll, Revision: "r1", Dimensions: dims, Index: VectorIndex{Type: IndexFlat},
		Replication: Replication{Factor: 3, AsyncEnabled: true}}
	if err := s.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.DeleteCollection(context.Background(), coll) })
	chunks := syntheticChunks(n, dims)
	start := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }

	if err := s.Upsert(ctx, coll, chunks[:300]); err != nil {
		t.Fatal(err)
	}
	// Kill node3 as the rest is written: the first of the 7 remaining batches races the
	// kill, the other 6 start after node3 has exited.
	killed := make(chan error, 1)
	go func() { killed <- c.Nodes[2].Kill() }()
	for lo := 300; lo < n; lo += 100 {
		if lo == 400 {
			if err := <-killed; err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Upsert(ctx, coll, chunks[lo:lo+100]); err != nil {
			t.Fatalf("upsert chunks %d-%d with node3 down (QUORUM): %v", lo, lo+100, err)
		}
	}
	phase("written with node3 killed")
	if got, err := s.Count(ctx, coll); err != nil || got != n {
		t.Fatalf("count with node3 down = %d, %v; want %d", got, err, n)
	}
	// Health while node3 is down: every shard has 2 of 3 live replicas. The nodes API fails
	// until gossip has noticed the loss: poll with single attempts.
	probe := nodeStore(t, c, 0, Config{Retry: wait.Backoff{Steps: 1}, Timeout: 5 * time.Second})
	var h Health
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		h, err = probe.CollectionHealth(ctx, coll)
		if err == nil && len(h.Nodes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health never listed 2 live nodes: %+v, %v", h, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	under, missing := h.UnderReplicated()
	if h.Factor != 3 || len(under) != h.Shards || missing != 0 {
		t.Fatalf("health with node3 down: %s (%+v); want every shard under-replicated, none missing", h, h)
	}
	for _, r := range h.Replicas {
		if len(r.Nodes) != 2 || slices.Contains(r.Nodes, "node3") {
			t.Fatalf("shard %s live replicas %v; want node1 and node2", r.Shard, r.Nodes)
		}
	}

	phase("health shows 2 of 3 replicas")
	if err := c.Nodes[2].Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	phase("node3 back")
	ids := make([]string, n)
	for i := range chunks {
		ids[i] = ChunkID("r1", chunks[i].DocID, chunks[i].Ordinal).String()
	}
	// Async replication repairs node3 in the background (its hash-tree comparison runs every
	// 5 s at the least); on a loaded machine it may not have finished within 90 s. Weaviate's
	// other repair is on read: a read at consistency ALL writes a missing or stale replica back.
	h, repaired := waitRepaired(ctx, t, probe, coll, 3, n, 90*time.Second, true)
	if !repaired {
		phase("async repair not done: reading every chunk at consistency ALL (repair on read)")
		if err := readAll(ctx, s, coll, ids); err != nil {
			t.Fatal(err)
		}
		h, _ = waitRepaired(ctx, t, probe, coll, 3, n, 2*time.Minute, false)
	}
	phase("repaired")
	if under, missing := h.UnderReplicated(); len(under) != 0 || missing != 0 {
		t.Fatalf("health after repair: %s", h)
	}
	for _, node := range c.Names {
		present, missing, err := idsOnNode(ctx, s, coll, node, ids)
		if err != nil {
			t.Fatal(err)
		}
		if present != n || len(missing) != 0 {
			t.Errorf("%s holds %d of %d chunk IDs; missing %d, e.g. %v", node, present, n, len(missing), missing[:min(3, len(missing))])
		}
	}
	phase("IDs checked")
	t.Logf("after repair: %s; each of %v holds all %d chunk IDs, object count %d per node", h, c.Names, n, n)
}

// topIDs runs nearVector for each query vector and returns the hit IDs, best first.
func topIDs(ctx context.Context, t *testing.T, s *Store, target string, queries [][]float32, k int) [][]string {
	t.Helper()
	out := make([][]string, len(queries))
	for i, q := range queries {
		hits, err := s.Search(ctx, target, Query{Mode: ModeDense, Vector: q, Limit: k})
		if err != nil {
			t.Fatalf("query %d on %s: %v", i, target, err)
		}
		for _, h := range hits {
			out[i] = append(out[i], h.ID)
		}
	}
	return out
}

// TestClusterQuorumReadsWithNodeDown writes 1,000 chunks with replication factor 3 (flat index,
// 3 shards), takes the top-10 of 50 queries with QUORUM reads through node1 with all nodes up,
// kills node2, and asks again through node1 and node3: the 50 top-10 lists must be identical
// (ID and order), and none may fail.
func TestClusterQuorumReadsWithNodeDown(t *testing.T) {
	c := clusterFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const n, dims = 1000, 64
	s1 := nodeStore(t, c, 0, Config{WriteConsistency: ConsistencyAll, ReadConsistency: ConsistencyQuorum})
	s3 := nodeStore(t, c, 2, Config{ReadConsistency: ConsistencyQuorum})
	coll := "RagopsTest_Cluster_Reads_R1"
	spec := CollectionSpec{Name: coll, Revision: "r1", Dimensions: dims, Index: VectorIndex{Type: IndexFlat},
		Replication: Replication{Factor: 3}, Shards: 3}
	if err := s1.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s1.DeleteCollection(context.Background(), coll) })
	if err := s1.Upsert(ctx, coll, syntheticChunks(n, dims)); err != nil {
		t.Fatal(err)
	}
	queries := make([][]float32, 50)
	for i := range queries {
		queries[i] = unitVector(fmt.Sprintf("q%d", i), dims)
	}
	want := topIDs(ctx, t, s1, coll, queries, 10)

	if err := c.Nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Nodes[1].Restart(context.Background(), 0); err != nil {
			t.Errorf("restart node2: %v", err)
		}
		if err := c.WaitHealthy(context.Background(), time.Minute); err != nil {
			t.Error(err)
		}
	}()
	for name, s := range map[string]*Store{"node1": s1, "node3": s3} {
		got := topIDs(ctx, t, s, coll, queries, 10)
		diff := 0
		for i := range want {
			if len(want[i]) != 10 || !slices.Equal(got[i], want[i]) {
				diff++
			}
		}
		if diff != 0 {
			t.Errorf("through %s with node2 down: %d of %d top-10 lists differ from all nodes up", name, diff, len(want))
		}
	}
}

// TestClusterShardedTopKEqualsSingleShard writes the first 500 SciFact documents' chunk
// vectors (deterministic per chunk text, 384 dimensions) into a 3-shard and a 1-shard
// collection (flat index, exact search) and compares the top-10 of 100 queries: the sharded
// collection's merged result must equal the single shard's in IDs, order and distances
// (within 1e-5).
func TestClusterShardedTopKEqualsSingleShard(t *testing.T) {
	c := clusterFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ids, texts := scifactDocs(t, 500)
	const dims = 384
	chunks := chunkDocs(t, ids, texts, dims)
	s := nodeStore(t, c, 1, Config{})
	var queries [][]float32
	for i := 0; i < len(chunks) && len(queries) < 100; i += len(chunks) / 100 {
		// A query near a chunk: its vector plus noise of the same scale.
		v, noise := chunks[i].Vector, unitVector(fmt.Sprintf("noise%d", i), dims)
		q := make([]float32, dims)
		for j := range q {
			q[j] = v[j] + noise[j]
		}
		queries = append(queries, q)
	}
	results := map[int][][]Hit{}
	for _, shards := range []int{3, 1} {
		coll := fmt.Sprintf("RagopsTest_Cluster_Shards%d_R1", shards)
		if err := ensureAfterRestart(ctx, t, s, CollectionSpec{Name: coll, Revision: "r1", Dimensions: dims,
			Index: VectorIndex{Type: IndexFlat}, Shards: shards}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.DeleteCollection(context.Background(), coll) })
		if err := s.Upsert(ctx, coll, chunks); err != nil {
			t.Fatal(err)
		}
		h, err := s.CollectionHealth(ctx, coll)
		if err != nil {
			t.Fatal(err)
		}
		if h.Shards != shards || len(h.Replicas) != shards {
			t.Fatalf("%s: health %+v; want %d shards", coll, h, shards)
		}
		if shards == 3 {
			// The shards live on different nodes.
			nodes := map[string]bool{}
			for _, r := range h.Replicas {
				nodes[r.Nodes[0]] = true
			}
			if len(nodes) != 3 {
				t.Fatalf("3 shards on nodes %v; want 3 distinct nodes", nodes)
			}
		}
		for _, q := range queries {
			hits, err := s.Search(ctx, coll, Query{Mode: ModeDense, Vector: q, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			results[shards] = append(results[shards], hits)
		}
	}
	diff := 0
	for i := range queries {
		a, b := results[3][i], results[1][i]
		same := len(a) == 10 && len(b) == 10
		for j := 0; same && j < 10; j++ {
			d := a[j].Distance - b[j].Distance
			same = a[j].ID == b[j].ID && d < 1e-5 && d > -1e-5
		}
		if !same {
			diff++
		}
	}
	if diff != 0 {
		t.Errorf("%d of %d top-10 lists of the 3-shard collection differ from the single shard's", diff, len(queries))
	}
	t.Logf("%d chunks of %d documents; %d queries, top-10 equal in all", len(chunks), len(ids), len(queries))
}

// TestClusterAliasMovesAtomically serves two revisions (factor 3, one chunk set each, hits
// tagged with their revision) behind one alias, and runs 4 query loops (through node1, node2,
// node3, node1) while the alias is moved 20 times between them: no query may fail, every
// answer's 10 hits must come from one revision, and both revisions must have answered.
func TestClusterAliasMovesAtomically(t *testing.T) {
	c := clusterFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n, dims = 400, 32
	admin := nodeStore(t, c, 0, Config{})
	alias := "RagopsTest_Cluster_Alias"
	var colls []string
	for _, rev := range []string{"ra", "rb"} {
		coll := "RagopsTest_Cluster_Alias_" + rev
		colls = append(colls, coll)
		if err := ensureAfterRestart(ctx, t, admin, CollectionSpec{Name: coll, Revision: rev, Dimensions: dims,
			Index: VectorIndex{Type: IndexFlat}, Replication: Replication{Factor: 3}}); err != nil {
			t.Fatal(err)
		}
		if err := admin.Upsert(ctx, coll, syntheticChunks(n, dims)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		admin.DeleteAlias(context.Background(), alias)
		for _, coll := range colls {
			admin.DeleteCollection(context.Background(), coll)
		}
	})
	if err := admin.SetAlias(ctx, alias, colls[0]); err != nil {
		t.Fatal(err)
	}
	// Followers apply the alias's creation (a raft log entry) a moment after node1 answers:
	// wait until each node resolves it, then measure the moves.
	for i := range c.Nodes {
		s := nodeStore(t, c, i, Config{})
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, err := s.Search(ctx, alias, Query{Mode: ModeDense, Vector: unitVector("warm", dims), Limit: 10})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not resolve the new alias after 30 s: %v", c.Names[i], err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	stop := make(chan struct{})
	var queries, mixed, failed atomic.Int64
	var perRev sync.Map
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i, node := range []int{0, 1, 2, 0} {
		s := nodeStore(t, c, node, Config{ReadConsistency: ConsistencyQuorum})
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				hits, err := s.Search(ctx, alias, Query{Mode: ModeDense, Vector: unitVector(fmt.Sprintf("q%d-%d", i, k), dims), Limit: 10})
				queries.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				revs := map[string]bool{}
				for _, h := range hits {
					revs[h.Revision] = true
				}
				if len(hits) != 10 || len(revs) != 1 {
					mixed.Add(1)
					continue
				}
				for r := range revs {
					v, _ := perRev.LoadOrStore(r, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
			}
		})
	}
	for move := 1; move <= 20; move++ {
		time.Sleep(100 * time.Millisecond)
		if err := admin.SetAlias(ctx, alias, colls[move%2]); err != nil {
			t.Fatalf("move %d: %v", move, err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	counts := map[string]int64{}
	perRev.Range(func(k, v any) bool { counts[k.(string)] = v.(*atomic.Int64).Load(); return true })
	if failed.Load() != 0 {
		err, _ := firstErr.Load().(error)
		t.Errorf("%d of %d queries failed during alias moves, first: %v", failed.Load(), queries.Load(), errors.Unwrap(err))
	}
	if mixed.Load() != 0 {
		t.Errorf("%d of %d answers mixed revisions or had fewer than 10 hits", mixed.Load(), queries.Load())
	}
	if counts["ra"] == 0 || counts["rb"] == 0 {
		t.Errorf("answers per revision %v; want both revisions to have served", counts)
	}
	t.Logf("%d queries over 20 alias moves: per revision %v, %d failed, %d mixed", queries.Load(), counts, failed.Load(), mixed.Load())
}

// ensureAfterRestart creates a collection on a cluster whose node2 an earlier test killed and
// restarted. For a few seconds after the restart, the schema leader's gRPC connection to the
// node can still be the closed one, and a create fails with Weaviate's internal "rpc error: ...
// the client connection is closing" (422) although every node reports HEALTHY; such errors are
// retried for up to 30 s. Any other error is returned at once.
func ensureAfterRestart(ctx context.Context, t *testing.T, s *Store, spec CollectionSpec) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.EnsureCollection(ctx, spec)
		if err == nil || !strings.Contains(err.Error(), "rpc error") || time.Now().After(deadline) {
			return err
		}
		t.Logf("create %s: %v (retrying)", spec.Name, err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
