package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// Fault injection: the manager is stopped while the gating Evaluation of a candidate revision
// runs, the evaluation Job finishes while no manager is up, and a new manager starts. The new
// manager continues from the Index status: the candidate goes live once, the alias ends on its
// collection, and there is exactly one gating Evaluation, one evaluation Job and one build Job
// per revision.
func TestManagerRestartedDuringGatedRolloutMovesTheAliasOnce(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Rollout = ragopsv1alpha1.RolloutSpec{Policy: ragopsv1alpha1.RolloutEvaluationGated, RevisionHistoryLimit: 3,
			Gate: &ragopsv1alpha1.RolloutGate{MinRecall: ptr.To(0.5), Evaluation: ragopsv1alpha1.EvaluationParameters{
				Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"},
			}}}
	})
	ctx := context.Background()
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	r2, c2 := buildRevision(t, ns, "besluiten")

	gateName := "besluiten-gate-" + r2
	var jobs batchv1.JobList
	eventually(t, 30*time.Second, "the gating evaluation Job", func() (bool, error) {
		err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: gateName})
		return err == nil && len(jobs.Items) == 1, err
	})
	// The fault: no manager while the gating Evaluation finishes.
	stopManager()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := startManager(); err != nil {
				t.Errorf("restart the manager for the next tests: %v", err)
			}
		}
	})
	if idx := getIndex(t, ns, "besluiten"); idx.Status.ActiveRevision != r1 {
		t.Fatalf("active revision %s before the gate finished, want %s", idx.Status.ActiveRevision, r1)
	}
	res, _ := json.Marshal(plan.EvaluateResult{Queries: 50, Metrics: []plan.MetricsAtK{{K: 10, Recall: 0.8, NDCG: 0.7, MRR: 0.6}}})
	finishJob(t, &jobs.Items[0], 0, string(res))
	start := time.Now()
	if err := startManager(); err != nil {
		t.Fatalf("start a new manager: %v", err)
	}
	restarted = true
	waitActive(t, ns, "besluiten", r2)
	took := time.Since(start)
	if got := aliasTarget(t, ns, "besluiten"); got != c2 {
		t.Fatalf("alias on %q after the restart, want %q", got, c2)
	}

	// Exactly one move to r2: AliasMoved events (a series counts its repeats).
	note := fmt.Sprintf("-> %q", r2)
	moves := func() (int32, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		var n int32
		for _, e := range evs.Items {
			if e.Reason == "AliasMoved" && strings.HasSuffix(e.Note, note) {
				n++
				if e.Series != nil {
					n += e.Series.Count - 1
				}
			}
		}
		return n, nil
	}
	eventually(t, 30*time.Second, "the AliasMoved event for "+r2, func() (bool, error) {
		n, err := moves()
		return n > 0, err
	})
	if n, _ := moves(); n != 1 {
		t.Errorf("the alias moved to %s %d times, want 1", r2, n)
	}
	var evals ragopsv1alpha1.EvaluationList
	if err := env.Client.List(ctx, &evals, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	gates := 0
	for _, ev := range evals.Items {
		if ev.Spec.Revision == r2 {
			gates++
			if ev.Name != gateName || ev.Status.RecallAt10 == nil || *ev.Status.RecallAt10 != 0.8 || ev.Status.Queries != 50 {
				t.Errorf("gate Evaluation %s: recall@10 %v over %d queries, want %s with 0.8 over 50", ev.Name, ev.Status.RecallAt10, ev.Status.Queries, gateName)
			}
		}
	}
	if gates != 1 {
		t.Errorf("%d Evaluations of %s, want 1", gates, r2)
	}
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: gateName}); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("%d evaluation Jobs of %s after the restart, want 1 (%v)", len(jobs.Items), gateName, err)
	}
	var all batchv1.JobList
	if err := env.Client.List(ctx, &all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range all.Items {
		names = append(names, j.Name)
	}
	sort.Strings(names)
	want := []string{"besluiten-" + r1 + "-build", "besluiten-" + r2 + "-build", jobs.Items[0].Name}
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("Jobs after the restart %v, want one build per revision and one evaluation Job %v", names, want)
	}
	t.Logf("manager stopped during the gate of %s; the new manager made it active %s after it started; Jobs %v",
		r2, took.Round(time.Millisecond), names)
}
