package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
)

// Defect 14: progress and waiting were Warning Events ("Warning Building", "Warning
// IndexNotReady"), so a platform alerting on Warning Events was paged on every build.
func TestCleanBuildAndEvaluationEmitNoWarningEvent(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	// The Evaluation is applied with the Index, as a GitOps commit does: it waits for the build.
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten-bm25"},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	finishGate(t, evaluationJob(t, ns, ev.Name), 0.8)
	eventually(t, 30*time.Second, "Evaluation Ready", func() (bool, error) {
		var got ragopsv1alpha1.Evaluation
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), &got)
		return err == nil && conditions.IsReady(&got), err
	})
	// Normal Events of the progress must be there (so the list is not empty by accident).
	var normal int
	eventually(t, 10*time.Second, "Normal Events of the build and evaluation", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		normal = 0
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeNormal {
				normal++
			}
		}
		return normal >= 3, nil
	})
	var evs eventsv1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("Warning Event on %s/%s: %s %s: %s", e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Action, e.Note)
		}
	}
}
