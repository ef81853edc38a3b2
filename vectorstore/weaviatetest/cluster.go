package weaviatetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster is a local Weaviate cluster: several weaviate-server processes on loopback, each with
// its own ports and data folder, joined by memberlist gossip (CLUSTER_JOIN) and raft
// (RAFT_JOIN, RAFT_BOOTSTRAP_EXPECT = number of nodes). Node i is named "node<i+1>". Kill and
// Restart a node through its [Server] (data folder and ports are kept).
type Cluster struct {
	// Nodes are the servers, Nodes[0] is node1 (the gossip seed).
	Nodes []*Server
	// Names are the CLUSTER_HOSTNAMEs, Names[i] belongs to Nodes[i].
	Names []string
}

// ClusterOptions configures [LaunchCluster]; the zero value starts three nodes.
type ClusterOptions struct {
	Options
	// Size is the number of nodes; zero means 3.
	Size int
}

// ClusterEnv returns the environment of node i (0-based) of a local cluster of len(gossip)
// nodes, where gossip[j] and raft[j] are node j's gossip and raft ports (its data port is
// gossip[j]+1, its raft RPC port raft[j]+1): the single-node [Env] with its own hostname,
// CLUSTER_JOIN at node1's gossip port (for i > 0), RAFT_JOIN naming every node's raft
// address, RAFT_BOOTSTRAP_EXPECT the node count (all nodes are raft voters) and
// RAFT_TIMEOUTS_MULTIPLIER=3. The data folder
// is left empty (set PERSISTENCE_DATA_PATH after it).
func ClusterEnv(i int, grpcPort int, gossip, raft []int) []string {
	env := Env("", grpcPort, gossip[i], gossip[i]+1, raft[i], raft[i]+1)
	join := make([]string, len(raft))
	for j := range raft {
		join[j] = NodeName(j) + ":" + strconv.Itoa(raft[j])
	}
	env = append(env,
		// Raft timeouts 3x the defaults: with 1x a loaded machine (tests beside builds)
		// made leaders step down and elections flap.
		"RAFT_TIMEOUTS_MULTIPLIER=3",
		"CLUSTER_HOSTNAME="+NodeName(i),
		"RAFT_JOIN="+strings.Join(join, ","),
		"RAFT_BOOTSTRAP_EXPECT="+strconv.Itoa(len(raft)),
	)
	if i > 0 {
		env = append(env, "CLUSTER_JOIN=127.0.0.1:"+strconv.Itoa(gossip[0]))
	}
	return env
}

// NodeName returns the CLUSTER_HOSTNAME of node i (0-based): "node1", "node2", ...
func NodeName(i int) string { return "node" + strconv.Itoa(i+1) }

// LaunchCluster starts opts.Size nodes (default 3) on one block of consecutive free ports
// (6 per node: gossip, data, raft, raft RPC, gRPC, HTTP), all at once (raft bootstrap waits
// for every voter), then waits until each answers /v1/.well-known/ready and the nodes API of
// node1 lists every node as HEALTHY. On failure all nodes are stopped and their folders removed.
//
// Ports are free when picked but another process can take one before a node binds it; a
// launch that fails with "address already in use" is retried on a new block, up to 3 times.
func LaunchCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	var err error
	for attempt := 1; ; attempt++ {
		var c *Cluster
		c, err = launchCluster(ctx, opts)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
	}
}

func launchCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	n := opts.Size
	if n == 0 {
		n = 3
	}
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BinaryPath(); err != nil {
			return nil, err
		}
	}
	ports, err := freePortBlock(6 * n)
	if err != nil {
		return nil, err
	}
	gossip, raft := make([]int, n), make([]int, n)
	for i := range n {
		gossip[i], raft[i] = ports[6*i], ports[6*i+2]
	}
	c := &Cluster{Nodes: make([]*Server, n), Names: make([]string, n)}
	// node1 is the gossip seed: the others exit when CLUSTER_JOIN is refused, so they start
	// once node1's gossip port accepts connections. Readiness needs the raft quorum, so it is
	// awaited after all have started.
	for i := range n {
		c.Names[i] = NodeName(i)
		block := ports[6*i : 6*i+6]
		s, err := launchNode(ctx, bin, opts.Options, block, ClusterEnv(i, block[4], gossip, raft))
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes[i] = s
		if i == 0 {
			if err := s.waitListening(ctx, gossip[0], 60*time.Second); err != nil {
				c.Stop()
				return nil, fmt.Errorf("%w\nweaviate log tail:\n%s", err, s.LogTail())
			}
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range c.Nodes {
		wg.Go(func() {
			if err := s.waitReadyOrStop(ctx, opts.Options); err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.Names[i], err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.WaitHealthy(ctx, 60*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// StartCluster launches a three-node cluster for one test and stops it in t.Cleanup; a missing
// binary skips the test (fails it under RAGOPS_REQUIRE_ALL=1). On failure the log tails of all
// nodes go to the test log.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := LaunchCluster(ctx, ClusterOptions{Options: Options{Binary: bin}})
	if err != nil {
		t.Fatalf("start weaviate cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range c.Nodes {
				t.Logf("%s log tail:\n%s", c.Names[i], s.LogTail())
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop weaviate cluster: %v", err)
		}
	})
	return c
}

// Stop stops every node ([Server.Stop]: SIGTERM, then SIGKILL after 30 s) and removes their
// data folders; it returns the joined errors.
func (c *Cluster) Stop() error {
	errs := make([]error, len(c.Nodes))
	done := make(chan struct{}, len(c.Nodes))
	for i, s := range c.Nodes {
		go func() {
			if s != nil {
				errs[i] = s.Stop()
			}
			done <- struct{}{}
		}()
	}
	for range c.Nodes {
		<-done
	}
	return errors.Join(errs...)
}

// NodeStatus is one node as the nodes API (GET /v1/nodes) reports it.
type NodeStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// Statuses returns the nodes API answer of the running node asked (index into Nodes).
func (c *Cluster) Statuses(ctx context.Context, asked int) ([]NodeStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Nodes[asked].HTTPAddr+"/v1/nodes", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/nodes on %s: %s", c.Names[asked], resp.Status)
	}
	var body struct {
		Nodes []NodeStatus `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	return body.Nodes, nil
}

// WaitHealthy waits up to timeout until every node is ready and every node's nodes API lists
// all nodes as HEALTHY (gossip and raft membership settled).
func (c *Cluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		ok := true
		for i := range c.Nodes {
			st, err := c.Statuses(ctx, i)
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			healthy := 0
			for _, n := range st {
				if n.Status == "HEALTHY" {
					healthy++
				}
			}
			if healthy != len(c.Nodes) {
				ok, last = false, fmt.Sprintf("%s sees %d of %d nodes healthy: %+v", c.Names[i], healthy, len(c.Nodes), st)
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("weaviate cluster not healthy after %s: %s", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitListening waits until something accepts TCP connections on 127.0.0.1:port, failing early
// when the process exits.
func (s *Server) waitListening(ctx context.Context, port int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("weaviate-server exited before listening on %s: %v", addr, s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("nothing listens on %s after %s", addr, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
