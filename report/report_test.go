package report

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

func TestWriteSVGShowsEveryEvaluation(t *testing.T) {
	evals := []ragopsv1alpha1.Evaluation{
		{Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed-512"}, EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeDense}},
			Status: ragopsv1alpha1.EvaluationStatus{RecallAt10: ptr.To(0.7712), NDCGAt10: ptr.To(0.6401)}},
		{Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "late"}, EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeHybrid}},
			Status: ragopsv1alpha1.EvaluationStatus{RecallAt10: ptr.To(0.8101), NDCGAt10: ptr.To(0.7002), SpanHitRate: ptr.To(0.4388)}},
		{Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "pending"}}},
	}
	rows := Rows(evals)
	if len(rows) != 2 || rows[0].Label != "fixed-512 dense" || rows[1].Label != "late hybrid" || rows[0].SpanHit != nil || *rows[1].SpanHit != 0.4388 {
		t.Fatalf("rows %+v", rows)
	}
	var buf bytes.Buffer
	if err := Write(&buf, rows, "SciFact", "svg"); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"<svg", "fixed-512 dense", "late hybrid", "recall@10", "nDCG@10", "span hit@10"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	buf.Reset()
	if err := Write(&buf, rows[:1], "SciFact", "svg"); err != nil || strings.Contains(buf.String(), "span hit@10") {
		t.Errorf("no spans: legend has span hit@10 (err %v)", err)
	}
	if err := Write(&buf, nil, "x", "svg"); err == nil {
		t.Error("no rows: want an error")
	}
	if err := Write(&buf, rows, "x", "bmpx"); err == nil {
		t.Error("unknown format: want an error")
	}
}
