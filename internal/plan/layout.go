package plan

import (
	"strings"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// ApplyLayout sets spec's replication, shard count and compression from the build's
// Replication, Sharding and Compression (each may be nil: one copy, Weaviate's default
// sharding, no compression). The consistency levels are not part of a collection: see
// vectorstore.Config.WriteConsistency and ReadConsistency.
func (b Build) ApplyLayout(spec *vectorstore.CollectionSpec) {
	if r := b.Replication; r != nil {
		spec.Replication = vectorstore.Replication{Factor: int(r.Factor), AsyncEnabled: r.AsyncEnabled}
		if spec.Replication.Factor == 1 {
			spec.Replication.Factor = 0
		}
	}
	if sh := b.Sharding; sh != nil {
		spec.Shards = int(sh.DesiredCount)
	}
	if c := b.Compression; c != nil && c.Type != "" && c.Type != ragopsv1alpha1.CompressionNone {
		spec.Index.Compression = vectorstore.Compression{Type: strings.ToLower(string(c.Type)), Bits: int(c.Bits),
			Segments: int(c.Segments), TrainingLimit: int(c.TrainingLimit), RescoreLimit: int(c.RescoreLimit)}
	}
}
