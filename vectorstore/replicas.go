package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"
)

// ShardReplicas is one shard of a collection and where its replicas are live.
type ShardReplicas struct {
	// Shard is Weaviate's shard name.
	Shard string
	// Nodes are the live nodes (in the nodes API answer) holding a loaded replica, sorted.
	Nodes []string
	// Objects is the object count each of those nodes reports for its replica. Weaviate
	// updates it asynchronously (it can lag writes by seconds).
	Objects map[string]int64
}

// Health is the replication and shard state of one collection as the live nodes report it.
type Health struct {
	// Factor is the collection's replication factor (copies wanted of each shard).
	Factor int
	// Shards is the collection's number of physical shards (shardingConfig.actualCount).
	Shards int
	// Replicas lists the shards that have at least one live replica, by name. A shard whose
	// every replica is down is missing here (Shards counts it).
	Replicas []ShardReplicas
	// Nodes are the live nodes, sorted.
	Nodes []string
}

// UnderReplicated returns the shards with fewer live replicas than Factor (a shard with none
// is counted by Shards - len(Replicas)), and how many shards have no live replica.
func (h Health) UnderReplicated() (shards []string, missing int) {
	for _, r := range h.Replicas {
		if len(r.Nodes) < h.Factor {
			shards = append(shards, r.Shard)
		}
	}
	return shards, max(h.Shards-len(h.Replicas), 0)
}

// CollectionHealth reads the collection's replication factor and shard count from its schema
// and each live node's replicas from the nodes API (GET /v1/nodes?output=verbose). Nodes that
// are down are absent from that answer once gossip has noticed (seconds); before that the
// nodes API fails and so does this call.
//
// Errors: [*CollectionNotFoundError]; typed server and network errors.
func (s *Store) CollectionHealth(ctx context.Context, collection string) (Health, error) {
	var h Health
	err := s.retry(ctx, func() error {
		class, err := s.client.Schema().ClassGetter().WithClassName(collection).Do(ctx)
		if err != nil {
			if isNotFound(err) {
				return &CollectionNotFoundError{Op: "collection health", Collection: collection}
			}
			return classify("collection health", collection, err)
		}
		h.Factor = 1
		if class.ReplicationConfig != nil && class.ReplicationConfig.Factor > 0 {
			h.Factor = int(class.ReplicationConfig.Factor)
		}
		h.Shards = shardCount(class)
		resp, err := s.client.Cluster().NodesStatusGetter().WithClass(collection).WithOutput("verbose").Do(ctx)
		if err != nil {
			return classify("collection health", collection, err)
		}
		byShard := map[string]*ShardReplicas{}
		h.Nodes, h.Replicas = nil, nil
		for _, n := range resp.Nodes {
			if n == nil {
				continue
			}
			h.Nodes = append(h.Nodes, n.Name)
			for _, sh := range n.Shards {
				if sh == nil || sh.Class != collection || !sh.Loaded {
					continue
				}
				r := byShard[sh.Name]
				if r == nil {
					r = &ShardReplicas{Shard: sh.Name, Objects: map[string]int64{}}
					byShard[sh.Name] = r
				}
				r.Nodes = append(r.Nodes, n.Name)
				r.Objects[n.Name] = sh.ObjectCount
			}
		}
		for _, r := range byShard {
			sort.Strings(r.Nodes)
			h.Replicas = append(h.Replicas, *r)
		}
		sort.Slice(h.Replicas, func(i, j int) bool { return h.Replicas[i].Shard < h.Replicas[j].Shard })
		sort.Strings(h.Nodes)
		h.Shards = max(h.Shards, len(h.Replicas))
		return nil
	})
	return h, err
}

// shardCount reads shardingConfig.actualCount of a class (a JSON object in the schema), 0 if
// absent.
func shardCount(class *models.Class) int {
	m, ok := class.ShardingConfig.(map[string]any)
	if !ok {
		return 0
	}
	switch v := m["actualCount"].(type) {
	case float64:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// String summarises the health, e.g. "3 shards x 3 replicas wanted; 2 live nodes; 3 shards under-replicated".
func (h Health) String() string {
	under, missing := h.UnderReplicated()
	return fmt.Sprintf("%d shards x %d replicas wanted; %d live nodes; %d shards under-replicated, %d without a live replica",
		h.Shards, h.Factor, len(h.Nodes), len(under), missing)
}

// isNotFound reports a client error with HTTP status 404.
func isNotFound(err error) bool {
	var wce *fault.WeaviateClientError
	return errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound
}
