package evaluate

import (
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/query/expand"
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

// Issue 52, small-to-big: the plan's expansion becomes the query/expand spec (a bad one is
// refused), and the result takes the expansion metrics at the summary's expandK, span recall
// only where the summary has it; they stay out of the per-cut-off intervals.
func TestExpansionOfThePlan(t *testing.T) {
	if sp, err := expansionSpec(plan.Expand{Mode: ragopsv1alpha1.ExpandSection, Size: 8, K: 10}); err != nil || sp != (expand.Spec{Mode: expand.Section, Size: 8}) {
		t.Errorf("section: %+v, %v", sp, err)
	}
	for _, bad := range []plan.Expand{{Mode: ragopsv1alpha1.ExpandNeighbours, Size: 6}, {Mode: "Paragraph", Size: 1}, {Mode: ragopsv1alpha1.ExpandSection}} {
		if _, err := expansionSpec(bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	x := plan.Expand{Mode: ragopsv1alpha1.ExpandSection, Size: 8, K: 5}
	sum := evaluator.Summary{Cutoffs: []int{5, 10}, Queries: 2, ExpandK: 5, Metrics: map[string]float64{"recall@5": 1, "recall@10": 1,
		"spanRecall@5": 0.5, "expandedSpanRecall@5": 1, "tokensReturned@5": 6, "expandedTokensReturned@5": 12},
		Intervals: map[string]evaluator.MetricInterval{"recall@5": {}, "tokensReturned@5": {Hi: 7}}}
	got := expansionResult(x, sum)
	if got.Expand != x || got.SpanRecall == nil || *got.SpanRecall != 0.5 || got.ExpandedSpanRecall == nil || *got.ExpandedSpanRecall != 1 ||
		got.TokensReturned != 6 || got.ExpandedTokensReturned != 12 {
		t.Errorf("expansion result %+v", got)
	}
	delete(sum.Metrics, "spanRecall@5")
	delete(sum.Metrics, "expandedSpanRecall@5")
	if got := expansionResult(x, sum); got.SpanRecall != nil || got.ExpandedSpanRecall != nil {
		t.Errorf("without spans: %+v", got)
	}
	if iv := intervalsAt(sum, 5); len(iv) != 1 {
		t.Errorf("intervals at 5: %v, want recall only", iv)
	}
}
