package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
)

// TestIndexLayoutValidation submits the Index sample with replication, sharding and
// compression settings: the valid ones must be accepted (with defaults filled in), each
// invalid one refused with a message naming the field.
func TestIndexLayoutValidation(t *testing.T) {
	ctx := context.Background()
	good := loadSample(t, "ragops_v1alpha1_index.yaml")
	ensureNamespace(t, good.GetNamespace())
	good.SetName("layout-ok")
	set("spec.replication", map[string]any{"factor": int64(3), "asyncEnabled": true})(good.Object)
	set("spec.sharding", map[string]any{"desiredCount": int64(3)})(good.Object)
	set("spec.compression", map[string]any{"type": "RQ", "bits": int64(1), "rescoreLimit": int64(200)})(good.Object)
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("valid layout refused: %v", err)
	}
	defer env.Client.Delete(ctx, good)
	repl := good.Object["spec"].(map[string]any)["replication"].(map[string]any)
	if repl["writeConsistency"] != "QUORUM" || repl["readConsistency"] != "QUORUM" {
		t.Errorf("consistency defaults = %v, %v; want QUORUM, QUORUM", repl["writeConsistency"], repl["readConsistency"])
	}

	cases := []struct {
		name  string
		edits []mutation
		want  []string
	}{
		{"replication factor 0", []mutation{set("spec.replication", map[string]any{"factor": int64(0)})},
			[]string{"spec.replication.factor", "greater than or equal to 1"}},
		{"unknown consistency", []mutation{set("spec.replication", map[string]any{"readConsistency": "TWO"})},
			[]string{"spec.replication.readConsistency", "Unsupported value"}},
		{"zero shards", []mutation{set("spec.sharding", map[string]any{"desiredCount": int64(0)})},
			[]string{"spec.sharding.desiredCount", "greater than or equal to 1"}},
		{"unknown compression", []mutation{set("spec.compression", map[string]any{"type": "LVQ"})},
			[]string{"spec.compression.type", "Unsupported value"}},
		{"bits on PQ", []mutation{set("spec.compression", map[string]any{"type": "PQ", "bits": int64(8)})},
			[]string{"spec.compression.bits", "bits applies to RQ only"}},
		{"RQ with 4 bits", []mutation{set("spec.compression", map[string]any{"type": "RQ", "bits": int64(4)})},
			[]string{"spec.compression.bits", "Unsupported value"}},
		{"segments on SQ", []mutation{set("spec.compression", map[string]any{"type": "SQ", "segments": int64(96)})},
			[]string{"spec.compression.segments", "segments applies to PQ only"}},
		{"rescore on PQ", []mutation{set("spec.compression", map[string]any{"type": "PQ", "rescoreLimit": int64(100)})},
			[]string{"spec.compression.rescoreLimit", "rescoreLimit applies to SQ, RQ and BQ"}},
		{"PQ on a flat index", []mutation{set("spec.vectorIndex.type", "flat"), set("spec.compression", map[string]any{"type": "PQ"})},
			[]string{"spec.compression.type", "flat vector index supports compression None, BQ or RQ only"}},
		{"BQ rescore on hnsw", []mutation{set("spec.compression", map[string]any{"type": "BQ", "rescoreLimit": int64(100)})},
			[]string{"spec.compression.rescoreLimit", "BQ takes rescoreLimit on a flat vector index only"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, "ragops_v1alpha1_index.yaml")
			u.SetName("bad-" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"))
			for _, e := range tc.edits {
				e(u.Object)
			}
			requireRejected(t, ctx, u, tc.want)
		})
	}
}
