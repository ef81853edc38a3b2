package controllers_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// playTrialWithResults builds trial and plays its Dense and BM25 Evaluations with per-query
// recall@10 over 40 queries: the first dense (bm25) queries hit.
func playTrialWithResults(t *testing.T, ns, trial string, dense, bm25 int) {
	t.Helper()
	waitIndex(t, ns, trial)
	buildRevision(t, ns, trial)
	playEvaluationWithResults(t, ns, trial+"-dense", hits(40, func(i int) bool { return i < dense }))
	playEvaluationWithResults(t, ns, trial+"-bm25", hits(40, func(i int) bool { return i < bm25 }))
}

// A winner tied with the baseline is not promoted (issue 55, item 20): fixed-96 finds 30 of
// 40 queries, the baseline fixed-64 29; the adjusted comparison does not tell them apart, so
// Promoted is False (NotBetterThanBaseline, with the comparison in the message), the Index
// that serves keeps its strategy and model and no strategy is created for it.
func TestExperimentDoesNotPromoteAWinnerTiedWithTheBaseline(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	exp := experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.Promote = &ragopsv1alpha1.ExperimentPromotion{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "archive"}}
	})
	t64, t96 := trialName(64), trialName(96)
	archive := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archive"}, Spec: ragopsv1alpha1.IndexSpec{
		CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"}, StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "current"},
		Model: ragopsv1alpha1.ModelSpec{Name: "served-model", ImagePath: exp.Spec.Space.Models[0].ImagePath}, Weaviate: exp.Spec.IndexTemplate.Weaviate}}
	if err := env.Client.Create(ctx, archive); err != nil {
		t.Fatal(err)
	}
	playTrialWithResults(t, ns, t64, 29, 5)
	playTrialWithResults(t, ns, t96, 30, 10)

	exp = waitExperiment(t, ns, "Promoted=False (NotBetterThanBaseline)", func(e *ragopsv1alpha1.Experiment) bool {
		c := condition(e, ragopsv1alpha1.ConditionPromoted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ragopsv1alpha1.ReasonNotBetterThanBaseline
	})
	o := exp.Status.CurrentOptimalTrial
	if o == nil || o.Trial != t96 || o.Retrieval != "dense" || o.VsBaseline == nil || o.VsBaseline.Trial != t64 || o.VsBaseline.PValue == nil || *o.VsBaseline.PValue < 0.05 {
		t.Fatalf("currentOptimalTrial %+v, want %s/dense tied with the baseline %s/dense", o, t96, t64)
	}
	if msg := condition(exp, ragopsv1alpha1.ConditionPromoted).Message; !strings.Contains(msg, "not told apart from the baseline "+t64+"/dense") ||
		!strings.Contains(msg, "adjusted p") || !strings.Contains(msg, "Index archive is left as it is") || exp.Status.Promotion != nil {
		t.Fatalf("Promoted: %q, status.promotion %+v", msg, exp.Status.Promotion)
	}
	if idx := getIndex(t, ns, "archive"); idx.Spec.StrategyRef.Name != "current" || idx.Spec.Model.Name != "served-model" {
		t.Fatalf("the Index changed on a tie: %+v %+v", idx.Spec.StrategyRef, idx.Spec.Model)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fixed-96"}, &ragopsv1alpha1.ChunkingStrategy{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the winner's strategy was created on a tie: %v", err)
	}
}
