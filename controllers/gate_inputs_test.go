package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/evaluator/results"
)

// bm25Evaluation creates a BM25 Evaluation name of fixture's Index on the gate's data set.
func bm25Evaluation(t *testing.T, ns, name string) {
	t.Helper()
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := env.Client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// meanRecall is set's mean recall@10 as status shows it (4 decimals).
func meanRecall(t *testing.T, set *results.Set) float64 {
	t.Helper()
	_, v, err := set.Column("recall@10")
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return controllers.Round(sum / float64(len(v)))
}

// Issue 55 item 6: results were taken from any pod carrying the Job's name label, newest
// first. A pod left with that label by an earlier Job of the same name (another UID), newer
// than the Job's own and bound to the same kubelet, reports other figures and logs another
// set: the Evaluation takes the figures and the per-query results of the pod its Job
// controls.
func TestResultsComeFromThePodTheJobControls(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	bm25Evaluation(t, ns, "besluiten-bm25")
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	job := evaluationJob(t, ns, "besluiten-bm25")
	k := resultsKubelet(t)

	own := querySet(40, func(i int) float64 { return float64(i%4) / 4 })
	log, ref := framedLog(t, ns, "besluiten-bm25", own)
	k.setLog(job, log)
	playPods(t, job, k.node, 0, resultMessage(t, own, &ref))
	time.Sleep(1100 * time.Millisecond) // creation timestamps have whole seconds: the stray pod is newer

	stray := querySet(40, func(int) float64 { return 1 })
	strayLog, strayRef := framedLog(t, ns, "besluiten-bm25", stray)
	name := job.Name + "-old"
	k.setPodLog(job, name, strayLog)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: podLabels(job),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: types.UID("0b1d0000-0000-4000-8000-000000000000"), Controller: ptr.To(true)}},
		Annotations:     map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}},
		Spec: *job.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = k.node
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: "ragops:test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: resultMessage(t, stray, &strayRef), Reason: "Completed"}}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	markJobFinished(t, job, metav1.Now(), 0, 1)

	c := resultsCondition(t, ns, "besluiten-bm25", metav1.ConditionTrue, controllers.ReasonResultsStored)
	ev := getEvaluation(t, ns, "besluiten-bm25")
	if want := meanRecall(t, own); ev.Status.RecallAt10 == nil || *ev.Status.RecallAt10 != want {
		t.Errorf("recall@10 %v, want the Job's own pod's %v (the stray pod reported %v)", ptr.Deref(ev.Status.RecallAt10, -1), want, meanRecall(t, stray))
	}
	if r := ev.Status.Results; r == nil || r.SHA256 != ref.SHA256 {
		t.Errorf("status.results %+v (%s), want the set the Job's own pod logged (SHA-256 %s), not the stray pod's %s", r, c.Message, ref.SHA256, strayRef.SHA256)
	}
}

// Issue 55 item 5: a failed write of <evaluation>-results published the new figures beside
// status.results naming the previous run's set, and was never retried. The results
// ConfigMap is made immutable (the API server then refuses the next run's data): the
// retried run's figures wait, with the previous run's figures and set still paired and
// ResultsStored Unknown saying why; once the ConfigMap is gone the write is retried and the
// new figures come with their set.
func TestFailedResultsWriteHoldsTheFiguresAndIsRetried(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	bm25Evaluation(t, ns, "besluiten-bm25")
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	first := querySet(40, func(i int) float64 { return float64(i%4) / 4 })
	job1 := evaluationJob(t, ns, "besluiten-bm25")
	ref1 := finishWithResults(t, job1, "besluiten-bm25", first)
	resultsCondition(t, ns, "besluiten-bm25", metav1.ConditionTrue, controllers.ReasonResultsStored)

	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: ns, Name: results.ConfigMapName("besluiten-bm25")}
	if err := env.Client.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Immutable = ptr.To(true)
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}

	patchAnnotation(t, getEvaluation(t, ns, "besluiten-bm25"), controllers.AnnotationRetry, "1")
	job2 := evaluationJob(t, ns, "besluiten-bm25")
	second := querySet(40, func(i int) float64 { return float64(i%2) / 2 })
	ref2 := finishWithResults(t, job2, "besluiten-bm25", second)
	var held *ragopsv1alpha1.Evaluation
	eventually(t, 60*time.Second, "ResultsStored Unknown naming the refused write", func() (bool, error) {
		held = getEvaluation(t, ns, "besluiten-bm25")
		c := condition(held, controllers.ConditionResultsStored)
		return c != nil && c.Status == metav1.ConditionUnknown && strings.Contains(c.Message, "immutable") && strings.Contains(c.Message, job2.Name), nil
	})
	if got, want := ptr.Deref(held.Status.RecallAt10, -1), meanRecall(t, first); got != want || held.Status.Results == nil || held.Status.Results.SHA256 != ref1.SHA256 {
		t.Errorf("while the write fails: recall@10 %v with results %+v, want the first run's %v with its set %s", got, held.Status.Results, want, ref1.SHA256)
	}
	if h := held.Status.History; len(h) == 0 || h[len(h)-1].Job != job1.Name {
		t.Errorf("history %+v records the held run", h)
	}

	if err := env.Client.Delete(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the retried write stores the second run's set with its figures", func() (bool, error) {
		ev := getEvaluation(t, ns, "besluiten-bm25")
		c := condition(ev, controllers.ConditionResultsStored)
		return c != nil && c.Status == metav1.ConditionTrue && ev.Status.Results != nil && ev.Status.Results.SHA256 == ref2.SHA256, nil
	})
	if got, want := ptr.Deref(getEvaluation(t, ns, "besluiten-bm25").Status.RecallAt10, -1), meanRecall(t, second); got != want {
		t.Errorf("recall@10 %v after the write, want the second run's %v", got, want)
	}
}

// unservedGatedFixture is gatedFixture with spec.serving.enabled false: nothing requeues the
// Index while it gates (no model server to wait for), so only a watch event wakes it.
func unservedGatedFixture(t *testing.T, ns string, minRecall, maxRegression *float64) {
	t.Helper()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Serving.Enabled = ptr.To(false)
		ix.Spec.Rollout = ragopsv1alpha1.RolloutSpec{Policy: ragopsv1alpha1.RolloutEvaluationGated, RevisionHistoryLimit: 3,
			Gate: &ragopsv1alpha1.RolloutGate{MinRecall: minRecall, MaxRegression: maxRegression, Evaluation: ragopsv1alpha1.EvaluationParameters{
				Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"},
			}}}
	})
}

// Issue 55 item 4: a retry of a Rejected revision decided at once on the run it retried
// (read from the cache right after the retry annotation was patched), and the end of the
// retried run (Ready True all along) did not wake the Index. Here the retried candidate
// stays Gating while its new run goes, and that run's 0.90 passes minRecall 0.5 and moves
// the alias, with nothing but the Evaluation's status change to wake the Index.
func TestGateRetryDecidesOnTheRunAfterTheRetry(t *testing.T) {
	ns := newNamespace(t)
	unservedGatedFixture(t, ns, ptr.To(0.5), nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	r2, c2 := buildRevision(t, ns, "besluiten")
	first := gateJob(t, ns, r2)
	finishGate(t, first, 0.40)
	eventually(t, 30*time.Second, "candidate rejected", stalledWith(t, ns, controllers.ReasonGateFailed, "below minRecall 0.5000"))

	patchAnnotation(t, getIndex(t, ns, "besluiten"), controllers.AnnotationRetry, "1")
	again := gateJob(t, ns, r2)
	if again.Name == first.Name {
		t.Fatalf("the retry did not start a new Job (%s)", again.Name)
	}
	eventually(t, 30*time.Second, "the retried candidate gating on its new run", func() (bool, error) {
		rev := revisionStatus(t, ns, r2)
		return rev.Phase == ragopsv1alpha1.RevisionGating, fmt.Errorf("phase %s: %s", rev.Phase, rev.Message)
	})
	finishGate(t, again, 0.90)
	waitActive(t, ns, "besluiten", r2)
	if got := aliasTarget(t, ns, "besluiten"); got != c2 {
		t.Fatalf("alias %q, want the retried candidate's %q", got, c2)
	}
	if rev := revisionStatus(t, ns, r2); rev.GateRecall == nil || *rev.GateRecall != 0.90 {
		t.Errorf("gateRecall %v, want the retried run's 0.90", rev.GateRecall)
	}
}

// runningSync waits for a running sync Job of revision rev of fixture's Index.
func runningSync(t *testing.T, ns, rev string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	eventually(t, 30*time.Second, "a running sync Job of revision "+rev, func() (bool, error) {
		for _, j := range syncJobsOf(t, ns, rev) {
			if j.Status.Succeeded == 0 && j.Status.Failed == 0 && j.DeletionTimestamp.IsZero() {
				job = &j
				return true, nil
			}
		}
		return false, nil
	})
	return job
}

// Issue 55 item 3: the baseline's figures were those the active revision had as a
// candidate, however many corpus syncs ago, and the candidate was measured before it
// synced. Here r2 is measured as a candidate on corpus revision c1 and takes the alias; the
// Corpus moves to c2 while r3 builds on c1. r3 syncs c2 before its gating Evaluation is made,
// r2 (synced to c2) is measured again as the baseline, and the gate decides on the two c2
// runs: 0.60 against 0.95 regresses beyond 0.05 (against r2's stale 0.62 it would pass).
func TestGateMeasuresBothSidesOnTheSameCorpusRevision(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	gatedFixture(t, ns, nil, ptr.To(0.05))
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	r2, _ := buildRevision(t, ns, "besluiten")
	finishGate(t, gateJob(t, ns, r2), 0.62)
	finishGate(t, gateJob(t, ns, r1), 0.62)
	waitActive(t, ns, "besluiten", r2)
	c1 := revisionStatus(t, ns, r2).CorpusRevision

	setStrategySize(t, ns, 128)
	var r3 string
	eventually(t, 30*time.Second, "a third revision building", func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		r3 = idx.Status.Revision
		return r3 != r2 && r3 != r1 && findRev(idx, r3) != nil && findRev(idx, r3).Phase == ragopsv1alpha1.RevisionBuilding, nil
	})
	waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", r3))
	c2 := editDoc(t, ns, "b.md", "# Motivering\nHet voorstel is gewijzigd.")
	if got, _ := buildRevision(t, ns, "besluiten"); got != r3 {
		t.Fatalf("built %s, want %s", got, r3)
	}
	if got := revisionStatus(t, ns, r3).CorpusRevision; got != c1 {
		t.Fatalf("r3 built on corpus revision %q, want %q (the Corpus moved during its build)", got, c1)
	}
	finishJob(t, runningSync(t, ns, r2), 0, string(syncResult))
	sync3 := runningSync(t, ns, r3)
	var ev ragopsv1alpha1.Evaluation
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten-gate-" + r3}, &ev); !apierrors.IsNotFound(err) {
		t.Fatalf("the candidate's gating Evaluation exists before it synced corpus revision %s (err %v)", c2, err)
	}
	finishJob(t, sync3, 0, string(syncResult))

	finishGate(t, gateJob(t, ns, r3), 0.60)
	finishGate(t, gateJob(t, ns, r2), 0.95)
	eventually(t, 60*time.Second, "candidate rejected against the re-measured baseline", stalledWith(t, ns, controllers.ReasonGateFailed, "regresses more than 0.0500"))
	msg := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled).Message
	if !strings.Contains(msg, "0.9500") {
		t.Errorf("Stalled message %q does not compare with the baseline's c2 figure 0.9500", msg)
	}
	for _, rev := range []string{r2, r3} {
		if got := getEvaluation(t, ns, "besluiten-gate-"+rev).Status.CorpusRevision; got != c2 {
			t.Errorf("the gating Evaluation of %s measured corpus revision %q, want %q", rev, got, c2)
		}
	}
	if got := getIndex(t, ns, "besluiten").Status.ActiveRevision; got != r2 {
		t.Errorf("active revision %s, want %s", got, r2)
	}
}

// findRev returns revision name of idx, nil when it has none.
func findRev(idx *ragopsv1alpha1.Index, name string) *ragopsv1alpha1.RevisionStatus {
	for i := range idx.Status.Revisions {
		if idx.Status.Revisions[i].Name == name {
			return &idx.Status.Revisions[i]
		}
	}
	return nil
}
