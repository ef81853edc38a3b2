package vectorstore

import (
	"strings"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// ApplyLayout sets spec's replication, shard count and compression from the Index spec's
// fields (each may be nil: one copy, Weaviate's default sharding, no compression). The
// consistency levels are not part of a collection: see Config.WriteConsistency and
// Config.ReadConsistency.
func ApplyLayout(spec *CollectionSpec, r *ragopsv1alpha1.ReplicationSpec, sh *ragopsv1alpha1.ShardingSpec, c *ragopsv1alpha1.CompressionSpec) {
	if r != nil {
		spec.Replication = Replication{Factor: int(r.Factor), AsyncEnabled: r.AsyncEnabled}
		if spec.Replication.Factor == 1 {
			spec.Replication.Factor = 0
		}
	}
	if sh != nil {
		spec.Shards = int(sh.DesiredCount)
	}
	if c != nil && c.Type != "" && c.Type != ragopsv1alpha1.CompressionNone {
		spec.Index.Compression = Compression{Type: strings.ToLower(string(c.Type)), Bits: int(c.Bits),
			Segments: int(c.Segments), TrainingLimit: int(c.TrainingLimit), RescoreLimit: int(c.RescoreLimit)}
	}
}
