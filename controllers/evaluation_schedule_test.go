package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
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
// the run gets its own Job, both runs are in status.history, and a run significantly worse
// than the previous one beyond spec.alert.maxDrop sets QualityDropped with a Warning Event
// naming both runs.
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
	qualityCondition(t, ns, ev.Name, controllers.ReasonNoBaseline)

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
	for _, want := range []string{"run " + job2.Name + " (revision " + r1 + ")", "previous run " + job1.Name + " (revision " + r1 + ")", "recall@10 \u22120.050 [\u22120.050, \u22120.050]", "p = 0.0001"} {
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
		mfs, err := crmetrics.Registry.Gather()
		if err != nil {
			return false, err
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
				if labels["namespace"] == ns && labels["evaluation"] == ev.Name && labels["index"] == "besluiten" {
					return m.GetGauge().GetValue() == 1, nil
				}
			}
		}
		return false, nil
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
