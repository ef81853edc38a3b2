package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
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
	failTrialBuild(t, ns, trialName(64))
	exp := waitExperiment(t, ns, "one failed, the next building", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "1/1/0/0/1/0" })
	if ts := trialOf(exp, trialName(64)); !strings.Contains(ts.Message, "out of memory") {
		t.Fatalf("failed trial message %q", ts.Message)
	}
	failTrialBuild(t, ns, trialName(96))
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

// A Corpus the operator cannot read (a PVC) is estimated by one estimate Job over the
// Experiment's seeded sample before any trial starts: no Index exists while it runs; its
// figures become the trials' estimates and the budget holds them; a trial it could not
// estimate records why and waits while another build runs (it will run alone). The Job is
// made once: reconciles after it finished make no second one. The Experiment is created
// before the Corpus's first scan: its trials wait, and the scan's end resumes them (the
// Experiment watches its Corpus; nothing else would wake it).
func TestExperimentEstimatesAPVCCorpusWithAnEstimateJob(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	pvc := readOnlyClaim(ns, "archief")
	archief := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archief"},
		Spec: ragopsv1alpha1.CorpusSpec{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "archief"}}}
	for _, o := range []client.Object{pvc, archief} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pvc.Status.Phase = corev1.ClaimBound
	if err := env.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	exp := experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.CorpusRef.Name = "archief"
		e.Spec.Parallelism = 2
		e.Spec.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTokens: ptr.To[int64](5000)}
	})
	// The trials wait for the Corpus's first scan; its finishing resumes the Experiment.
	waitExperiment(t, ns, "trials waiting for the scan", func(e *ragopsv1alpha1.Experiment) bool {
		return len(e.Status.Trials) == 2 && e.Status.Trials[0].Message == "waiting for Corpus archief's first scan before estimating the trials' tokens"
	})
	scans := func() []batchv1.Job { return ownedJobs(t, ns, archief) }
	eventually(t, 30*time.Second, "the Corpus's scan Job", func() (bool, error) { return len(scans()) == 1, nil })
	scan := scans()[0]
	res, _ := json.Marshal(plan.ScanResult{Documents: 400, Bytes: 400_000, Revision: "pvc-rev-1"})
	finishJob(t, &scan, 0, string(res))

	t64, t96 := trialName(64), trialName(96)
	estimates := func() []batchv1.Job {
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelComponent: workload.ComponentEstimate}); err != nil {
			t.Fatal(err)
		}
		return jobs.Items
	}
	eventually(t, 30*time.Second, "one estimate Job", func() (bool, error) { return len(estimates()) == 1, nil })
	job := estimates()[0]
	if c := metav1.GetControllerOf(&job); c == nil || c.Kind != "Experiment" || c.Name != "sweep" {
		t.Fatalf("estimate Job controller %+v", c)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, &cm); err != nil {
		t.Fatal(err)
	}
	var p plan.Estimate
	if err := plan.Decode([]byte(cm.Data[plan.File]), &p); err != nil {
		t.Fatal(err)
	}
	if p.Source.Dir != plan.CorpusDir || p.Seed != exp.Spec.Algorithm.Seed || p.Fraction != 0.05 || p.MinDocuments != 32 || len(p.Trials) != 2 ||
		p.Trials[0].Name != t64 || p.Trials[1].Name != t96 || p.Trials[0].ModelDir != exp.Spec.Space.Models[0].ImagePath || p.Trials[0].Strategy.Size != 64 {
		t.Fatalf("estimate plan %+v", p)
	}
	exp = waitExperiment(t, ns, "trials waiting for their estimate", func(e *ragopsv1alpha1.Experiment) bool {
		ts := trialOf(e, t64)
		return ts != nil && strings.HasPrefix(ts.Message, "waiting for the token estimate of estimate Job "+job.Name)
	})
	if got := indexNames(t, ns); got != "" || counts(exp) != "2/0/0/0/0/0" {
		t.Fatalf("Indexes %q (%s) before the estimate", got, counts(exp))
	}

	est, _ := json.Marshal(plan.EstimateResult{Documents: 400, Bytes: 400_000, SampleDocuments: 32, Trials: []plan.TrialEstimate{
		{Name: t64, Revision: p.Trials[0].Revision, Tokens: 700, Chunks: 7},
		{Name: t96, Revision: p.Trials[1].Revision, Error: "model folder /models/x: no tokenizer.json"}}})
	finishJob(t, &job, 0, string(est))
	exp = waitExperiment(t, ns, "t64 building on its estimate, t96 waiting", func(e *ragopsv1alpha1.Experiment) bool {
		ts := trialOf(e, t96)
		return counts(e) == "1/1/0/0/0/0" && ts != nil && strings.HasPrefix(ts.Message, "waiting for the running builds: it has no token estimate")
	})
	if ts := trialOf(exp, t64); ts.EstimatedTokens != 700 || ts.EstimateSampleDocuments != 32 || exp.Status.Budget.TokensReserved != 700 {
		t.Fatalf("t64 %+v, budget %+v", ts, exp.Status.Budget)
	}
	if ts := trialOf(exp, t96); ts.EstimatedTokens != 0 || !strings.Contains(ts.EstimateError, "no tokenizer.json") {
		t.Fatalf("t96 %+v", ts)
	}
	if got := indexNames(t, ns); got != t64 {
		t.Fatalf("Indexes %q while t96 waits", got)
	}
	// Another reconcile (a touched annotation) makes no second estimate Job.
	touch := getExperiment(t, ns)
	metav1.SetMetaDataAnnotation(&touch.ObjectMeta, "test/touched", "1")
	if err := env.Client.Update(ctx, touch); err != nil {
		t.Fatal(err)
	}
	waitExperiment(t, ns, "the touch reconciled", func(e *ragopsv1alpha1.Experiment) bool {
		return e.Annotations["test/touched"] == "1" && counts(e) == "1/1/0/0/0/0"
	})
	if n := len(estimates()); n != 1 {
		t.Fatalf("%d estimate Jobs, want 1", n)
	}
}
