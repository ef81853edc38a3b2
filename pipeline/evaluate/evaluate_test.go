package evaluate

import (
	"testing"

	"github.com/ragops/ragops/evaluator"
)

// Defect 10 of issue 16: span hit rate@10 is spanHit@10, never spanHit@100 or spanHit@1000
// (a prefix match picked whichever the map iteration met last).
func TestSpanHitRateIsSpanHitAt10Exactly(t *testing.T) {
	sum := evaluator.Summary{Cutoffs: []int{10, 100, 1000}, Queries: 4, Metrics: map[string]float64{
		"recall@10": 0.5, "spanHit@10": 0.25, "spanHit@100": 0.5, "spanHit@1000": 0.75,
	}}
	// Map order is random: 50 draws all pick spanHit@100 or @1000 at least once unless the
	// name is matched exactly.
	for range 50 {
		res := ResultFromSummary(sum)
		if res.SpanHitRate == nil || *res.SpanHitRate != 0.25 {
			t.Fatalf("span hit rate %v, want spanHit@10 = 0.25", res.SpanHitRate)
		}
	}
	delete(sum.Metrics, "spanHit@10")
	if res := ResultFromSummary(sum); res.SpanHitRate != nil {
		t.Fatalf("span hit rate %v without spanHit@10, want none", *res.SpanHitRate)
	}
}

// Every cut-off carries its spanHit@k when the dataset has spans, and none without them
// (recall@k alone must not produce a span figure).
func TestSpanHitAtEveryCutoff(t *testing.T) {
	sum := evaluator.Summary{Cutoffs: []int{1, 3, 10}, Queries: 4, Metrics: map[string]float64{
		"recall@1": 0.25, "recall@3": 0.5, "recall@10": 1,
		"spanHit@1": 0.25, "spanHit@3": 0.75, "spanHit@10": 1,
	}}
	res := ResultFromSummary(sum)
	want := map[int]float64{1: 0.25, 3: 0.75, 10: 1}
	if len(res.Metrics) != 3 {
		t.Fatalf("%d cut-offs, want 3: %+v", len(res.Metrics), res.Metrics)
	}
	for _, m := range res.Metrics {
		if m.SpanHit == nil || *m.SpanHit != want[m.K] {
			t.Errorf("k=%d: spanHit %v, want %v", m.K, m.SpanHit, want[m.K])
		}
	}
	for _, k := range []string{"spanHit@1", "spanHit@3", "spanHit@10"} {
		delete(sum.Metrics, k)
	}
	for _, m := range ResultFromSummary(sum).Metrics {
		if m.SpanHit != nil {
			t.Errorf("k=%d: spanHit %v without spans, want none", m.K, *m.SpanHit)
		}
	}
}
