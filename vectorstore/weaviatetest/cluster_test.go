package weaviatetest

import (
	"context"
	"testing"
	"time"
)

// TestClusterKillRestart starts three nodes, checks each sees all three healthy, kills node3
// (SIGKILL) and checks node1's nodes API then fails or reports it not HEALTHY, restarts it on its data folder and
// checks all three are healthy again.
func TestClusterKillRestart(t *testing.T) {
	c := StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := c.Statuses(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 3 {
		t.Fatalf("node2 lists %d nodes, want 3: %+v", len(st), st)
	}
	if err := c.Nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := c.Statuses(ctx, 0)
		// While a node is unreachable the nodes API answers 500 (it asks every node) or
		// lists the node as not HEALTHY.
		down := err != nil
		for _, n := range st {
			if n.Name == "node3" && n.Status != "HEALTHY" {
				down = true
			}
		}
		if down {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("node1 still reports node3 healthy after the kill: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := c.Nodes[2].Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
}
