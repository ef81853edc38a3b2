package controllers

import (
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// ApplyResult puts spanHit@k into status at every cut-off that has it (rounded to 4
// decimals), spanHit@10 also into spanHitRate, and clears what a previous result set.
func TestApplyResultSpanHitPerCutoff(t *testing.T) {
	hit := func(v float64) *float64 { return &v }
	var st ragopsv1alpha1.EvaluationStatus
	ApplyResult(&st, plan.EvaluateResult{Queries: 12, SpanHitRate: hit(0.75), Metrics: []plan.MetricsAtK{
		{K: 1, Recall: 0.5, SpanHit: hit(1.0 / 3)}, {K: 10, Recall: 1, SpanHit: hit(0.75)},
	}})
	if len(st.Metrics) != 2 || st.Metrics[0].SpanHit == nil || *st.Metrics[0].SpanHit != 0.3333 ||
		st.Metrics[1].SpanHit == nil || *st.Metrics[1].SpanHit != 0.75 || st.SpanHitRate == nil || *st.SpanHitRate != 0.75 {
		t.Fatalf("status %+v", st)
	}
	ApplyResult(&st, plan.EvaluateResult{Queries: 12, Metrics: []plan.MetricsAtK{{K: 10, Recall: 1}}})
	if len(st.Metrics) != 1 || st.Metrics[0].SpanHit != nil || st.SpanHitRate != nil {
		t.Fatalf("a result without spans left span figures: %+v", st)
	}
}

// Issue 52, Evaluations as a persona: the worker's count of unreadable chunks reaches
// status.unreadableChunks, and a result without a persona clears it.
func TestApplyResultUnreadableChunks(t *testing.T) {
	var st ragopsv1alpha1.EvaluationStatus
	zero, two := int64(0), int64(2)
	ApplyResult(&st, plan.EvaluateResult{Queries: 3, UnreadableChunks: &two})
	if st.UnreadableChunks == nil || *st.UnreadableChunks != 2 {
		t.Fatalf("unreadableChunks %v, want 2", st.UnreadableChunks)
	}
	ApplyResult(&st, plan.EvaluateResult{Queries: 3, UnreadableChunks: &zero})
	if st.UnreadableChunks == nil || *st.UnreadableChunks != 0 {
		t.Fatalf("unreadableChunks %v, want 0", st.UnreadableChunks)
	}
	ApplyResult(&st, plan.EvaluateResult{Queries: 3})
	if st.UnreadableChunks != nil {
		t.Fatalf("unreadableChunks %v without a persona, want none", *st.UnreadableChunks)
	}
}

// Issue 52, small-to-big: the worker's expansion figures land in status.expansion rounded,
// span recall only when the dataset had spans, and a run without them clears it.
func TestApplyResultExpansion(t *testing.T) {
	var st ragopsv1alpha1.EvaluationStatus
	half, whole := 0.5, 1.0
	ApplyResult(&st, plan.EvaluateResult{Queries: 1, Expansion: &plan.ExpansionResult{
		Expand:     plan.Expand{Mode: ragopsv1alpha1.ExpandSection, Size: 8, K: 10},
		SpanRecall: &half, ExpandedSpanRecall: &whole, TokensReturned: 6.123456, ExpandedTokensReturned: 12}})
	x := st.Expansion
	if x == nil || x.Mode != ragopsv1alpha1.ExpandSection || x.Size != 8 || x.K != 10 || x.SpanRecall == nil || *x.SpanRecall != 0.5 ||
		x.ExpandedSpanRecall == nil || *x.ExpandedSpanRecall != 1 || x.TokensReturned != 6.1235 || x.ExpandedTokensReturned != 12 {
		t.Fatalf("status.expansion %+v", x)
	}
	ApplyResult(&st, plan.EvaluateResult{Queries: 1, Expansion: &plan.ExpansionResult{Expand: plan.Expand{Mode: ragopsv1alpha1.ExpandNeighbours, Size: 1, K: 10}, TokensReturned: 6, ExpandedTokensReturned: 18}})
	if x := st.Expansion; x == nil || x.SpanRecall != nil || x.ExpandedSpanRecall != nil || x.ExpandedTokensReturned != 18 {
		t.Fatalf("without spans: status.expansion %+v", x)
	}
	ApplyResult(&st, plan.EvaluateResult{Queries: 1})
	if st.Expansion != nil {
		t.Fatalf("a run without expansion left status.expansion %+v", st.Expansion)
	}
}
