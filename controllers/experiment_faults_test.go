package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Fault: the manager stops while the first trial builds and its build finishes with no
// manager up. The new manager starts no trial twice and loses none: two Indexes, four
// Evaluations, one build Job per Index, both trials Succeeded.
func TestExperimentSurvivesAManagerRestartMidRun(t *testing.T) {
	ns := newNamespace(t)
	experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) { e.Spec.Cleanup = ragopsv1alpha1.CleanupKeepAll })
	t64, t96 := trialName(64), trialName(96)
	waitExperiment(t, ns, "one trial building", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "1/1/0/0/0/0" })
	eventually(t, 30*time.Second, "the build Job and the Index's Building revision", func() (bool, error) {
		idx := getIndex(t, ns, t64)
		for _, r := range idx.Status.Revisions {
			if r.Name == idx.Status.Revision && r.Phase == ragopsv1alpha1.RevisionBuilding {
				return buildJobs(t, ns, t64) == 1, nil
			}
		}
		return false, nil
	})
	stopManager()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := startManager(); err != nil {
				t.Errorf("restart the manager: %v", err)
			}
		}
	})
	buildRevision(t, ns, t64) // finishes while no manager runs
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	playEvaluation(t, ns, t64+"-dense", 0.8)
	playEvaluation(t, ns, t64+"-bm25", 0.6)
	playTrial(t, ns, t96, 0.7, 0.5)
	exp := readyExperiment(t, ns)
	if counts(exp) != "0/0/0/2/0/0" {
		t.Fatalf("trial counts %s after the restart", counts(exp))
	}
	if got := indexNames(t, ns); got != t64+" "+t96 {
		t.Fatalf("Indexes %q", got)
	}
	if evs := childNames(t, ns, &ragopsv1alpha1.EvaluationList{}); len(evs) != 4 {
		t.Fatalf("Evaluations %v, want 4", evs)
	}
	for _, n := range []string{t64, t96} {
		if got := buildJobs(t, ns, n); got != 1 {
			t.Errorf("%d build Jobs of %s, want 1", got, n)
		}
	}
	if exp.Status.CurrentOptimalTrial == nil || exp.Status.CurrentOptimalTrial.Trial != t64 {
		t.Fatalf("optimal %+v", exp.Status.CurrentOptimalTrial)
	}
}

// Fault: builds fail. The first failure is counted and the Experiment goes on; the second
// passes maxFailedTrials 1: Stalled TooManyFailedTrials, the third trial never starts.
func TestExperimentCountsFailedBuildsUpToMaxFailedTrials(t *testing.T) {
	ns := newNamespace(t)
	experimentFixture(t, ns, []int32{64, 96, 128}, func(e *ragopsv1alpha1.Experiment) { e.Spec.MaxFailedTrials = 1 })
	fail := func(name string) {
		t.Helper()
		var idx *ragopsv1alpha1.Index
		waitIndex(t, ns, name)
		eventually(t, 30*time.Second, "revision of "+name, func() (bool, error) {
			idx = getIndex(t, ns, name)
			return idx.Status.Revision != "", nil
		})
		finishJob(t, waitJob(t, ns, fmt.Sprintf("%s-%s-build", name, idx.Status.Revision)), 1, `{"error":"embedder: out of memory"}`)
	}
	fail(trialName(64))
	exp := waitExperiment(t, ns, "one failed, the next building", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "1/1/0/0/1/0" })
	if ts := trialOf(exp, trialName(64)); !strings.Contains(ts.Message, "out of memory") {
		t.Fatalf("failed trial message %q", ts.Message)
	}
	fail(trialName(96))
	exp = waitExperiment(t, ns, "Stalled TooManyFailedTrials", func(e *ragopsv1alpha1.Experiment) bool {
		c := condition(e, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ragopsv1alpha1.ReasonTooManyFailedTrials
	})
	if counts(exp) != "1/0/0/0/2/0" || exp.Status.Progress != "2/3 (2 failed)" {
		t.Fatalf("counts %s progress %q", counts(exp), exp.Status.Progress)
	}
	if got := indexNames(t, ns); got != trialName(64)+" "+trialName(96) {
		t.Fatalf("Indexes %q: the third trial started", got)
	}
}

// Fault: the Experiment is deleted while a trial builds. Its Indexes (and their collections),
// Evaluations and generated strategies go, and none is recreated.
func TestExperimentDeletedMidRunTakesItsChildren(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) { e.Spec.Parallelism = 2 })
	_, c64 := playTrial(t, ns, trialName(64), 0.8, 0.6)
	waitExperiment(t, ns, "one done, one building", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "0/1/0/1/0/0" })
	var idx *ragopsv1alpha1.Index
	waitIndex(t, ns, trialName(96))
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		idx = getIndex(t, ns, trialName(96))
		return idx.Status.Revision != "", nil
	})
	job := waitJob(t, ns, fmt.Sprintf("%s-%s-build", trialName(96), idx.Status.Revision))
	if err := env.Client.Delete(ctx, getExperiment(t, ns)); err != nil {
		t.Fatal(err)
	}
	// envtest has no garbage collector: the stopped build Job waits for it.
	eventually(t, 30*time.Second, "the running build stopped", func() (bool, error) {
		var j batchv1.Job
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j)
		return apierrors.IsNotFound(err) || !j.DeletionTimestamp.IsZero(), nil
	})
	playGC(t, *job)
	eventually(t, 60*time.Second, "the Experiment gone", func() (bool, error) {
		var e ragopsv1alpha1.Experiment
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep"}, &e)
		return apierrors.IsNotFound(err), nil
	})
	for _, l := range []client.ObjectList{&ragopsv1alpha1.IndexList{}, &ragopsv1alpha1.EvaluationList{}, &ragopsv1alpha1.ChunkingStrategyList{}} {
		if names := childNames(t, ns, l); len(names) != 0 {
			t.Errorf("%T left after the Experiment: %v", l, names)
		}
	}
	if ok, err := directStore(t).CollectionExists(ctx, c64); err != nil || ok {
		t.Fatalf("collection %s exists=%v (%v)", c64, ok, err)
	}
}

// A trial whose estimate does not fit what is left of budget.maxTokens is not started: it is
// Skipped and BudgetExhausted gives the numbers; tokens spent come from the build's status.
func TestExperimentDoesNotStartATrialPastTheTokenBudget(t *testing.T) {
	ns := newNamespace(t)
	experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTokens: ptr.To[int64](605)}
	})
	playTrial(t, ns, trialName(64), 0.8, 0.6)
	exp := readyExperiment(t, ns)
	if counts(exp) != "0/0/0/1/0/1" || exp.Status.Budget.TokensSpent != 600 || exp.Status.Budget.Display != "600/605" {
		t.Fatalf("counts %s budget %+v", counts(exp), exp.Status.Budget)
	}
	ts := trialOf(exp, trialName(96))
	c := condition(exp, ragopsv1alpha1.ConditionBudgetExhausted)
	want := fmt.Sprintf("trial %s not started: it needs about %d tokens", trialName(96), ts.EstimatedTokens)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, want) || !strings.Contains(c.Message, "5 of the budget's 605 are left (600 spent") {
		t.Fatalf("BudgetExhausted %+v, want %q", c, want)
	}
	if got := indexNames(t, ns); got != trialName(64) {
		t.Fatalf("Indexes %q", got)
	}
}

// Fault: the space changes mid-run. The finished trial still in the new space is kept (no
// second build), the running trial that left it goes, the new one runs.
func TestExperimentSpecChangeKeepsFinishedTrialsInTheNewSpace(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) { e.Spec.Cleanup = ragopsv1alpha1.CleanupKeepAll })
	t64, t96, t128 := trialName(64), trialName(96), trialName(128)
	playTrial(t, ns, t64, 0.8, 0.6)
	waitIndex(t, ns, t96)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		idx = getIndex(t, ns, t96)
		return idx.Status.Revision != "", nil
	})
	job := waitJob(t, ns, fmt.Sprintf("%s-%s-build", t96, idx.Status.Revision))
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		exp := getExperiment(t, ns)
		exp.Spec.Space.Strategies[0].Template.Sizes = []int32{64, 128}
		return env.Client.Update(ctx, exp)
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the dropped trial's build stopped", func() (bool, error) {
		var j batchv1.Job
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j)
		return apierrors.IsNotFound(err) || !j.DeletionTimestamp.IsZero(), nil
	})
	playGC(t, *job)
	playTrial(t, ns, t128, 0.9, 0.5)
	exp := readyExperiment(t, ns)
	if counts(exp) != "0/0/0/2/0/0" || trialOf(exp, t96) != nil {
		t.Fatalf("counts %s, trial %s in status: %v", counts(exp), t96, trialOf(exp, t96))
	}
	if got := indexNames(t, ns); got != t128+" "+t64 {
		t.Fatalf("Indexes %q", got)
	}
	if n := buildJobs(t, ns, t64); n != 1 {
		t.Fatalf("%d build Jobs of the kept trial %s, want 1", n, t64)
	}
	if o := exp.Status.CurrentOptimalTrial; o == nil || o.Trial != t128 || o.VsBaseline == nil || o.VsBaseline.Trial != t64 || len(exp.Status.Leaderboard) != 4 {
		t.Fatalf("optimal %+v leaderboard %d", o, len(exp.Status.Leaderboard))
	}
}
