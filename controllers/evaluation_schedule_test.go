package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// qualityCondition waits for the Evaluation's QualityDropped condition to have reason.
func qualityCondition(t *testing.T, ns, name, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	eventually(t, 30*time.Second, "QualityDropped reason "+reason, func() (bool, error) {
		c = condition(getEvaluation(t, ns, name), controllers.ConditionQualityDropped)
		return c != nil && c.Reason == reason, nil
	})
	return c
}

// A scheduled Evaluation runs again once a schedule time has passed (played by moving
// status.lastScheduleTime two hours back, as a manager down across the slot would find it):
// the run gets its own Job, both runs are in status.history, and a run worse than the
// baseline run (the first) by more than spec.alert.maxDrop sets QualityDropped with a
// Warning Event naming both runs.
func TestScheduledRunsKeepHistoryAndAlertOnADrop(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			Schedule: "0 * * * *", Alert: &ragopsv1alpha1.QualityAlert{MaxDrop: 0.02}, HistoryLimit: ptr.To[int32](5),
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	job1 := evaluationJob(t, ns, ev.Name)
	finishWithResults(t, job1, ev.Name, querySet(300, gradedRecall))
	qualityCondition(t, ns, ev.Name, controllers.ReasonBaselinePinned)

	// The next hour's run, 0.05 worse on every query.
	got := getEvaluation(t, ns, ev.Name)
	base := got.DeepCopy()
	got.Status.LastScheduleTime = ptr.To(metav1.NewTime(time.Now().Add(-2 * time.Hour).Truncate(time.Hour)))
	if err := env.Client.Status().Patch(ctx, got, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	patchAnnotation(t, got, "example.com/touch", "1")
	job2 := evaluationJob(t, ns, ev.Name)
	if job2.Name == job1.Name {
		t.Fatalf("the scheduled run reused Job %s", job1.Name)
	}
	finishWithResults(t, job2, ev.Name, querySet(300, func(i int) float64 { return gradedRecall(i) - 0.05 }))
	c := qualityCondition(t, ns, ev.Name, controllers.ReasonQualityDropped)
	t.Logf("QualityDropped: %s", c.Message)
	for _, want := range []string{"run " + job2.Name + " (revision " + r1 + ")", "baseline run " + job1.Name + " (revision " + r1 + ")", "recall@10 \u22120.050 [\u22120.050, \u22120.050]", "below the allowed \u22120.020", "quality dropped"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("QualityDropped message %q does not say %q", c.Message, want)
		}
	}
	if c.Status != metav1.ConditionTrue {
		t.Errorf("QualityDropped %s, want True", c.Status)
	}
	got = getEvaluation(t, ns, ev.Name)
	h := got.Status.History
	if len(h) != 2 || h[0].Job != job1.Name || h[1].Job != job2.Name || h[1].Revision != r1 || h[1].Queries != 300 ||
		h[1].RecallAt10 == nil || *h[1].RecallAt10 != 0.575 || h[1].RecallInterval == nil {
		t.Errorf("history %+v, want the two runs, newest last, with recall@10 0.625 then 0.575 and its interval", h)
	}
	if lst := got.Status.LastScheduleTime; lst == nil || !lst.Time.Equal(time.Now().UTC().Truncate(time.Hour)) && !lst.Time.Equal(time.Now().UTC().Add(-time.Minute).Truncate(time.Hour)) {
		t.Errorf("lastScheduleTime %v, want this hour's slot (missed slots are one run)", lst)
	}
	// The chart's PrometheusRule alerts on this series.
	eventually(t, 10*time.Second, "ragops_evaluation_quality_dropped 1", func() (bool, error) {
		v, index, found := qualityGauge(t, ns, ev.Name)
		return found && index == "besluiten" && v == 1, nil
	})
	eventually(t, 30*time.Second, "a Warning Event QualityDropped", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == controllers.ReasonQualityDropped && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, job1.Name) {
				return true, nil
			}
		}
		return false, nil
	})
}

// An unparsable spec.schedule is Stalled naming the field.
func TestInvalidScheduleIsStalled(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"}, Schedule: "every night",
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25,
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}}}}}
	if err := env.Client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Stalled InvalidSchedule", func() (bool, error) {
		c := condition(getEvaluation(t, ns, ev.Name), ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonInvalidSchedule && strings.Contains(c.Message, "spec.schedule"), nil
	})
}

// newEvaluation creates the BM25 Evaluation name of Index besluiten on the test queries (the
// fixture's ConfigMap "queries"), its spec changed by mutate.
func newEvaluation(t *testing.T, ns, name string, mutate func(*ragopsv1alpha1.EvaluationSpec)) *ragopsv1alpha1.Evaluation {
	t.Helper()
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if mutate != nil {
		mutate(&ev.Spec)
	}
	if err := env.Client.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// passSlot plays a schedule slot that has passed (status.lastScheduleTime moved two hours
// back, as a manager down across the slot would find it) and wakes the Evaluation. A second
// slot within the hour needs another schedule (the latest slot of "0 * * * *" is this hour's
// whatever lastScheduleTime says): schedule, when not empty, replaces spec.schedule, which
// wakes it (an edit that runs nothing by itself).
func passSlot(t *testing.T, ns, name, schedule string) {
	t.Helper()
	got := getEvaluation(t, ns, name)
	base := got.DeepCopy()
	got.Status.LastScheduleTime = ptr.To(metav1.NewTime(time.Now().Add(-2 * time.Hour).Truncate(time.Hour)))
	if err := env.Client.Status().Patch(context.Background(), got, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if schedule == "" {
		patchAnnotation(t, got, "example.com/touch", strconv.FormatInt(time.Now().UnixNano(), 10))
		return
	}
	base = got.DeepCopy()
	got.Spec.Schedule = schedule
	if err := env.Client.Patch(context.Background(), got, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// waitRun waits until the last run in status.history is job's and returns the Evaluation.
func waitRun(t *testing.T, ns, name, job string) *ragopsv1alpha1.Evaluation {
	t.Helper()
	var ev *ragopsv1alpha1.Evaluation
	eventually(t, 30*time.Second, "run "+job+" in status.history", func() (bool, error) {
		ev = getEvaluation(t, ns, name)
		h := ev.Status.History
		return len(h) > 0 && h[len(h)-1].Job == job && !resultsPendingOf(ev), nil
	})
	return ev
}

// resultsPendingOf reports whether ResultsStored is still Unknown.
func resultsPendingOf(ev *ragopsv1alpha1.Evaluation) bool {
	c := condition(ev, controllers.ConditionResultsStored)
	return c == nil || c.Status == metav1.ConditionUnknown
}

// qualityGauge reads ragops_evaluation_quality_dropped of the Evaluation from the manager's
// registry: its value and index label, found false when there is no series.
func qualityGauge(t *testing.T, ns, name string) (value float64, index string, found bool) {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ragops_evaluation_quality_dropped" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["evaluation"] == name {
				return m.GetGauge().GetValue(), labels["index"], true
			}
		}
	}
	return 0, "", false
}

// QualityDropped compares each run with a pinned baseline, the first run on the revision, not
// with the previous run: a slow drift (0.015, then 0.03 below the baseline; each step within
// maxDrop 0.02 of the previous run) is caught, and a run no better than the dropped one keeps
// QualityDropped True instead of clearing it.
func TestQualityDroppedComparesWithThePinnedBaseline(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ev := newEvaluation(t, ns, "drift", func(s *ragopsv1alpha1.EvaluationSpec) {
		s.Schedule, s.Alert = "0 * * * *", &ragopsv1alpha1.QualityAlert{MaxDrop: 0.02}
	})
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	job1 := evaluationJob(t, ns, ev.Name)
	finishWithResults(t, job1, ev.Name, querySet(300, gradedRecall))
	c := qualityCondition(t, ns, ev.Name, controllers.ReasonBaselinePinned)
	if !strings.Contains(c.Message, "run "+job1.Name) {
		t.Errorf("BaselinePinned message %q does not name run %s", c.Message, job1.Name)
	}
	prev := job1.Name
	for i, step := range []struct {
		drop   float64
		reason string
		status metav1.ConditionStatus
	}{
		{0.015, controllers.ReasonQualityHeld, metav1.ConditionFalse},
		{0.03, controllers.ReasonQualityDropped, metav1.ConditionTrue}, // 0.015 below the previous run
		{0.03, controllers.ReasonQualityDropped, metav1.ConditionTrue}, // equal to the previous run
	} {
		passSlot(t, ns, ev.Name, fmt.Sprintf("%d * * * *", 10+i)) // a slot of its own
		job := evaluationJob(t, ns, ev.Name)
		if job.Name == prev {
			t.Fatalf("run %d reused Job %s", i+2, prev)
		}
		finishWithResults(t, job, ev.Name, querySet(300, func(q int) float64 { return gradedRecall(q) - step.drop }))
		got := waitRun(t, ns, ev.Name, job.Name)
		c := condition(got, controllers.ConditionQualityDropped)
		if c == nil || c.Reason != step.reason || c.Status != step.status {
			t.Fatalf("run %d, %.3f below the baseline: QualityDropped %+v, want %s %s", i+2, step.drop, c, step.status, step.reason)
		}
		if !strings.Contains(c.Message, "run "+job.Name+" (revision "+r1+") against the baseline run "+job1.Name) {
			t.Errorf("run %d: message %q does not name run %s and the baseline run %s", i+2, c.Message, job.Name, job1.Name)
		}
		if b := got.Status.Baseline; b == nil || b.Job != job1.Name || b.Revision != r1 || b.Results.ConfigMap != ev.Name+"-baseline" || b.Measurement == "" {
			t.Errorf("run %d: status.baseline %+v, want run %s of revision %s in ConfigMap %s-baseline", i+2, b, job1.Name, r1, ev.Name)
		}
		t.Logf("run %d: %s: %s", i+2, c.Reason, c.Message)
		prev = job.Name
	}
	if v, _, ok := qualityGauge(t, ns, ev.Name); !ok || v != 1 {
		t.Errorf("ragops_evaluation_quality_dropped %v (found %v), want 1", v, ok)
	}
}

// droppedEvaluation creates a scheduled Evaluation with spec.alert whose second run is 0.05
// below its first, and waits for QualityDropped=True and its gauge at 1 (Index besluiten
// active). It returns the Job of the second run.
func droppedEvaluation(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	newEvaluation(t, ns, name, func(s *ragopsv1alpha1.EvaluationSpec) {
		s.Schedule, s.Alert = "0 * * * *", &ragopsv1alpha1.QualityAlert{MaxDrop: 0.02}
	})
	job1 := evaluationJob(t, ns, name)
	finishWithResults(t, job1, name, querySet(300, gradedRecall))
	waitRun(t, ns, name, job1.Name)
	passSlot(t, ns, name, "")
	job2 := evaluationJob(t, ns, name)
	finishWithResults(t, job2, name, querySet(300, func(i int) float64 { return gradedRecall(i) - 0.05 }))
	qualityCondition(t, ns, name, controllers.ReasonQualityDropped)
	eventually(t, 30*time.Second, "ragops_evaluation_quality_dropped of "+name+" at 1", func() (bool, error) {
		v, index, ok := qualityGauge(t, ns, name)
		return ok && v == 1 && index == "besluiten", nil
	})
	return job2
}

// The quality gauge goes with the condition it reports: removing spec.alert removes
// QualityDropped, the baseline and the series, without running the Evaluation again;
// pointing spec.indexRef elsewhere removes them until a run decides again (no series stays
// at 1 under either Index); deleting the Evaluation removes the series.
func TestQualityGaugeGoesWithItsAlert(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	for _, name := range []string{"no-alert", "moved"} {
		droppedEvaluation(t, ns, name)
	}

	ev := getEvaluation(t, ns, "no-alert")
	base := ev.DeepCopy()
	ev.Spec.Alert = nil
	if err := env.Client.Patch(ctx, ev, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "no QualityDropped, no baseline, no series for no-alert", func() (bool, error) {
		got := getEvaluation(t, ns, "no-alert")
		_, _, ok := qualityGauge(t, ns, "no-alert")
		return got.Status.ObservedGeneration == got.Generation && condition(got, controllers.ConditionQualityDropped) == nil && got.Status.Baseline == nil && !ok, nil
	})
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "no-alert-baseline"}, &cm); !apierrors.IsNotFound(err) {
		t.Errorf("the baseline ConfigMap of no-alert is still there (%v)", err)
	}

	ev = getEvaluation(t, ns, "moved")
	base = ev.DeepCopy()
	ev.Spec.IndexRef.Name = "elsewhere"
	if err := env.Client.Patch(ctx, ev, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "no QualityDropped and no series for moved", func() (bool, error) {
		got := getEvaluation(t, ns, "moved")
		_, _, ok := qualityGauge(t, ns, "moved")
		return got.Status.ObservedGeneration == got.Generation && condition(got, controllers.ConditionQualityDropped) == nil && !ok, nil
	})

	if err := env.Client.Delete(ctx, getEvaluation(t, ns, "moved")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "no recall series of the deleted Evaluation", func() (bool, error) {
		mfs, err := crmetrics.Registry.Gather()
		if err != nil {
			return false, err
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "evaluation" && l.GetValue() == "moved" && strings.HasPrefix(mf.GetName(), "ragops_evaluation_") {
						return false, nil
					}
				}
			}
		}
		return true, nil
	})
}

// Only spec fields that change what is measured run an Evaluation again: editing historyLimit,
// alert, schedule and rerunOnRevisionChange of a measured Evaluation starts no Job; editing k
// does.
func TestOnlyMeasurementFieldsRerunTheEvaluation(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	newEvaluation(t, ns, "steady", nil)
	job1 := evaluationJob(t, ns, "steady")
	finishWithResults(t, job1, "steady", querySet(50, gradedRecall))
	ev := waitRun(t, ns, "steady", job1.Name)
	if ev.Status.Measurement == "" {
		t.Fatal("status.measurement is empty after a run")
	}

	base := ev.DeepCopy()
	ev.Spec.HistoryLimit = ptr.To[int32](3)
	ev.Spec.Alert = &ragopsv1alpha1.QualityAlert{MaxDrop: 0.05}
	ev.Spec.Schedule = "0 0 1 1 *" // next slot: New Year
	ev.Spec.RerunOnRevisionChange = ptr.To(false)
	if err := env.Client.Patch(ctx, ev, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the edit observed", func() (bool, error) {
		got := getEvaluation(t, ns, "steady")
		return got.Status.ObservedGeneration == got.Generation && got.Generation != base.Generation, nil
	})
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: "steady"}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Name != job1.Name {
		var names []string
		for _, j := range jobs.Items {
			names = append(names, j.Name)
		}
		t.Fatalf("Jobs %v after editing historyLimit, alert, schedule and rerunOnRevisionChange, want only %s", names, job1.Name)
	}
	if got := getEvaluation(t, ns, "steady"); !conditions.IsReady(got) || got.Status.Measurement != ev.Status.Measurement {
		t.Errorf("Ready %v, measurement %q (was %q)", conditions.IsReady(got), got.Status.Measurement, ev.Status.Measurement)
	}

	ev = getEvaluation(t, ns, "steady")
	base = ev.DeepCopy()
	ev.Spec.K = []int32{5, 10}
	if err := env.Client.Patch(ctx, ev, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if job := evaluationJob(t, ns, "steady"); job.Name == job1.Name {
		t.Fatalf("editing k reused Job %s", job.Name)
	}
}

// A schedule slot that comes while a run still runs starts no Job (concurrencyPolicy Forbid,
// the default): the running Job is neither replaced nor deleted, Reconciling says the slot
// waits, and the slot's run starts when the running one has ended. Each scheduled run seeds
// its bootstrap with its own slot: the plan carries it and status.history records it. With
// concurrencyPolicy Replace the slot deletes the running Job and starts its own. (The
// schedules are every minute: the test waits for a real slot to pass while the first runs run.)
func TestScheduledRunWaitsForTheRunningOneAndSeedsItsOwnBootstrap(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	newEvaluation(t, ns, "minutely", func(s *ragopsv1alpha1.EvaluationSpec) { s.Schedule = "* * * * *" })
	newEvaluation(t, ns, "replaced", func(s *ragopsv1alpha1.EvaluationSpec) {
		s.Schedule, s.ConcurrencyPolicy = "* * * * *", ragopsv1alpha1.ConcurrencyReplace
	})
	job1 := evaluationJob(t, ns, "minutely")
	replaced := evaluationJob(t, ns, "replaced")
	if strings.Contains(planOf(t, ns, job1.Name), `"run"`) {
		t.Errorf("the first run, before any slot, names a run in its plan: %s", planOf(t, ns, job1.Name))
	}

	eventually(t, 100*time.Second, "Reconciling says the next slot waits for "+job1.Name, func() (bool, error) {
		c := condition(getEvaluation(t, ns, "minutely"), ragopsv1alpha1.ConditionReconciling)
		return c != nil && strings.Contains(c.Message, job1.Name) && strings.Contains(c.Message, "waits for it to end (spec.concurrencyPolicy Forbid)"), nil
	})
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: "minutely"}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Name != job1.Name || !jobs.Items[0].DeletionTimestamp.IsZero() {
		t.Fatalf("%d Jobs while %s runs past a slot, want only it, not deleted", len(jobs.Items), job1.Name)
	}
	if ev := getEvaluation(t, ns, "minutely"); ev.Status.LastScheduleTime != nil {
		t.Errorf("lastScheduleTime %v while the slot waits, want none taken", ev.Status.LastScheduleTime)
	}
	// Replace: the first slot (the same minute's) replaced the running Job.
	eventually(t, 30*time.Second, "Replace deletes "+replaced.Name+" for the slot's Job", func() (bool, error) {
		var old batchv1.Job
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(replaced), &old)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		gone := apierrors.IsNotFound(err) || !old.DeletionTimestamp.IsZero()
		return gone && evaluationJob(t, ns, "replaced").Name != replaced.Name, nil
	})

	finishWithResults(t, job1, "minutely", querySet(50, gradedRecall))
	job2 := evaluationJob(t, ns, "minutely")
	if job2.Name == job1.Name {
		t.Fatalf("the slot's run reused Job %s", job1.Name)
	}
	ev := getEvaluation(t, ns, "minutely")
	if len(ev.Status.History) != 1 || ev.Status.History[0].Job != job1.Name || ev.Status.History[0].ScheduleTime != nil {
		t.Fatalf("history %+v: want run %s, which had no slot", ev.Status.History, job1.Name)
	}
	var p plan.Evaluate
	if err := json.Unmarshal([]byte(planOf(t, ns, job2.Name)), &p); err != nil {
		t.Fatal(err)
	}
	slot, err := time.Parse(time.RFC3339, p.Run)
	if err != nil || p.UID != string(ev.UID) || slot.Second() != 0 || slot.After(time.Now()) {
		t.Fatalf("plan of %s: run %q (%v), uid %q: want a past minute's slot and the Evaluation's UID", job2.Name, p.Run, err, p.UID)
	}
	finishWithResults(t, job2, "minutely", querySet(50, gradedRecall))
	ev = waitRun(t, ns, "minutely", job2.Name)
	if st := ev.Status.History[1].ScheduleTime; st == nil || !st.Time.Equal(slot) {
		t.Errorf("history records schedule time %v for run %s, want its plan's slot %s", st, job2.Name, p.Run)
	}
}
