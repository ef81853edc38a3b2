package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// gatedFixture is fixture's Index under an EvaluationGated rollout with the given bounds.
func gatedFixture(t *testing.T, ns string, minRecall, maxRegression *float64) {
	t.Helper()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Rollout = ragopsv1alpha1.RolloutSpec{Policy: ragopsv1alpha1.RolloutEvaluationGated, RevisionHistoryLimit: 3,
			Gate: &ragopsv1alpha1.RolloutGate{MinRecall: minRecall, MaxRegression: maxRegression, Evaluation: ragopsv1alpha1.EvaluationParameters{
				Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"},
			}}}
	})
}

// gateJob waits for the running Job of the gating Evaluation of rev and returns it.
func gateJob(t *testing.T, ns, rev string) *batchv1.Job {
	t.Helper()
	return evaluationJob(t, ns, "besluiten-gate-"+rev)
}

// evaluationJob waits for a running (unfinished) Job of the Evaluation name and returns it.
func evaluationJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	eventually(t, 30*time.Second, "a running Job of Evaluation "+name, func() (bool, error) {
		var jobs batchv1.JobList
		if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: name}); err != nil {
			return false, err
		}
		for i := range jobs.Items {
			if len(jobs.Items[i].Status.Conditions) == 0 && jobs.Items[i].DeletionTimestamp.IsZero() {
				job = &jobs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return job
}

// finishGate plays an Evaluation's Job: recall@10 (and nDCG, MRR) recall over 50 queries.
func finishGate(t *testing.T, job *batchv1.Job, recall float64) {
	t.Helper()
	res, _ := json.Marshal(plan.EvaluateResult{Queries: 50, Metrics: []plan.MetricsAtK{{K: 10, Recall: recall, NDCG: recall, MRR: recall}}})
	finishJob(t, job, 0, string(res))
}

func stalledWith(t *testing.T, ns, reason, text string) func() (bool, error) {
	return func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && strings.Contains(c.Message, text), nil
	}
}

// Defect 1: the candidate's recall, recorded while the gate waited for the active revision's
// baseline, let the next reconcile move the alias without comparing.
func TestMaxRegressionGateWaitsForTheBaseline(t *testing.T) {
	ns := newNamespace(t)
	gatedFixture(t, ns, nil, ptr.To(0.01))
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	setStrategySize(t, ns, 96)
	r2, _ := buildRevision(t, ns, "besluiten")
	finishGate(t, gateJob(t, ns, r2), 0.30)
	// The baseline of r1 starts and keeps running; the alias must stay on r1 meanwhile.
	baseline := gateJob(t, ns, r1)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got := aliasTarget(t, ns, "besluiten"); got != c1 {
			t.Fatalf("the alias moved to %q before the baseline was measured (want %q)", got, c1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	idx := getIndex(t, ns, "besluiten")
	if idx.Status.ActiveRevision != r1 {
		t.Fatalf("active revision %s, want %s", idx.Status.ActiveRevision, r1)
	}
	finishGate(t, baseline, 0.90)
	eventually(t, 30*time.Second, "candidate rejected for regressing", stalledWith(t, ns, controllers.ReasonGateFailed, "regresses more than 0.0100"))
	// Played without per-query results: the two means are compared, and the message says so.
	if c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled); !strings.Contains(c.Message, "point comparison: the gating Evaluation besluiten-gate-"+r2+" of revision "+r2+" has no per-query results") {
		t.Errorf("Stalled message %q does not say the gate compared means for want of per-query results", c.Message)
	}
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("a regressing candidate got the alias: %q, want %q", got, c1)
	}
	for _, r := range getIndex(t, ns, "besluiten").Status.Revisions {
		switch {
		case r.Name == r1 && (r.ServedTime == nil || r.Phase != ragopsv1alpha1.RevisionActive):
			t.Errorf("r1 %s: phase %s servedTime %v, want Active with a servedTime", r.Name, r.Phase, r.ServedTime)
		case r.Name == r2 && (r.ServedTime != nil || r.Phase != ragopsv1alpha1.RevisionRejected || r.GateRecall == nil || *r.GateRecall != 0.30):
			t.Errorf("r2 %s: phase %s servedTime %v gateRecall %v, want Rejected, never served, 0.30", r.Name, r.Phase, r.ServedTime, r.GateRecall)
		}
	}
}

// Defect 9: a failed gating Evaluation left the Index Reconciling forever, and a Rejected
// revision stayed rejected whatever changed in the gate.
func TestGateDeadEndsStallAndRecover(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	gatedFixture(t, ns, ptr.To(0.5), nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	// The candidate's gating Evaluation fails: the Index says so and is Stalled.
	setStrategySize(t, ns, 96)
	r2, c2 := buildRevision(t, ns, "besluiten")
	finishJob(t, gateJob(t, ns, r2), 1, `{"error":"dataset: queries.jsonl: no such file"}`)
	eventually(t, 30*time.Second, "Stalled naming the failed gating Evaluation", stalledWith(t, ns, controllers.ReasonGateEvaluationFailed, "besluiten-gate-"+r2))
	if c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled); !strings.Contains(c.Message, "no such file") || !strings.Contains(c.Message, controllers.AnnotationRetry) {
		t.Errorf("Stalled message %q does not give the cause and the retry", c.Message)
	}
	// A retry runs the gating Evaluation again; it now fails minRecall and the candidate is Rejected.
	patchAnnotation(t, getIndex(t, ns, "besluiten"), controllers.AnnotationRetry, "1")
	finishGate(t, gateJob(t, ns, r2), 0.40)
	eventually(t, 30*time.Second, "candidate rejected", stalledWith(t, ns, controllers.ReasonGateFailed, "below minRecall 0.5000"))

	// Lowering minRecall decides again on the recall already measured: the alias moves.
	var idx ragopsv1alpha1.Index
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Spec.Rollout.Gate.MinRecall = ptr.To(0.35)
	if err := env.Client.Update(ctx, &idx); err != nil {
		t.Fatal(err)
	}
	waitActive(t, ns, "besluiten", r2)
	if got := aliasTarget(t, ns, "besluiten"); got != c2 {
		t.Fatalf("alias %q, want the re-gated candidate %q", got, c2)
	}
}

// An Index applied with kubectl has no rollout.gate.evaluation.template, while the API server
// defaults the gating Evaluation's template.backoffLimit: the gate compared the two specs,
// patched the Evaluation to "fix" the difference on every reconcile and waited for ever
// (found by make demo's rollout walkthrough).
func TestGateOfAnIndexAppliedWithoutATemplateDecides(t *testing.T) {
	ns := newNamespace(t)
	gatedFixture(t, ns, ptr.To(0.5), nil)
	// What kubectl apply stores: no template object, so nothing under it is defaulted.
	ix := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"}}
	if err := env.Client.Patch(context.Background(), ix, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"rollout":{"gate":{"evaluation":{"template":null}}}}}`))); err != nil {
		t.Fatal(err)
	}
	if got := getIndex(t, ns, "besluiten").Spec.Rollout.Gate.Evaluation.Template.BackoffLimit; got != nil {
		t.Fatalf("the Index's gate template still has backoffLimit %d", *got)
	}
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	setStrategySize(t, ns, 96)
	r2, c2 := buildRevision(t, ns, "besluiten")
	job := gateJob(t, ns, r2)
	var ev ragopsv1alpha1.Evaluation
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "besluiten-gate-" + r2}, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Spec.Template.BackoffLimit == nil {
		t.Fatal("the API server did not default the gating Evaluation's template.backoffLimit: this test no longer reproduces the difference")
	}
	finishGate(t, job, 0.9)
	waitActive(t, ns, "besluiten", r2)
	if got := aliasTarget(t, ns, "besluiten"); got != c2 {
		t.Fatalf("alias on %q, want the passed candidate's %q", got, c2)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "besluiten-gate-" + r2}, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Generation != 1 {
		t.Errorf("the gating Evaluation was re-specified %d times for an unchanged gate", ev.Generation-1)
	}
}
