package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// servedEvaluation is a Dense Evaluation of Index "besluiten" whose queries Weaviate embeds.
func servedEvaluation(ns, name string, mode ragopsv1alpha1.RetrievalMode) *ragopsv1alpha1.Evaluation {
	return &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			QueryEmbedding: ragopsv1alpha1.QueryEmbeddingWeaviate,
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: mode,
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}}}}}
}

// stalledOn waits for the Evaluation to be Stalled with reason and returns the message.
func stalledOn(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var msg string
	eventually(t, 30*time.Second, "Evaluation "+name+" Stalled "+reason, func() (bool, error) {
		c := condition(getEvaluation(t, ns, name), ragopsv1alpha1.ConditionStalled)
		if c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason {
			msg = c.Message
			return true, nil
		}
		return false, nil
	})
	return msg
}

// spec.queryEmbedding Weaviate: refused at admission with mode BM25; on an Index whose
// serving is disabled the Evaluation is Stalled naming spec.queryEmbedding and
// spec.serving.enabled and starts no Job; once serving is enabled on the suite's Weaviate,
// which lacks text2vec-transformers, it is Stalled again naming ENABLE_MODULES, while the
// Index stays Ready with ServingReady False (informational).
func TestQueryEmbeddingWeaviateNeedsTheServingPath(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	err := env.Client.Create(ctx, servedEvaluation(ns, "keywords", ragopsv1alpha1.ModeBM25))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "queryEmbedding") {
		t.Fatalf("BM25 with queryEmbedding Weaviate: %v, want Invalid naming queryEmbedding", err)
	}
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Serving.Enabled = ptr.To(false) })
	if err := env.Client.Create(ctx, servedEvaluation(ns, "served", ragopsv1alpha1.ModeDense)); err != nil {
		t.Fatal(err)
	}
	rev, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", rev)
	msg := stalledOn(t, ns, "served", controllers.ReasonQueryEmbeddingUnavailable)
	for _, want := range []string{"spec.queryEmbedding", "spec.serving.enabled: false"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Stalled message %q does not name %q", msg, want)
		}
	}
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: "served"}); err != nil || len(jobs.Items) != 0 {
		t.Fatalf("%d Jobs (%v) for an Evaluation that cannot embed its queries", len(jobs.Items), err)
	}

	idx := getIndex(t, ns, "besluiten")
	patch := client.MergeFrom(idx.DeepCopy())
	idx.Spec.Serving.Enabled = nil
	if err := env.Client.Patch(ctx, idx, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Stalled naming the module", func() (bool, error) {
		c := condition(getEvaluation(t, ns, "served"), ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonQueryEmbeddingUnavailable && strings.Contains(c.Message, "ENABLE_MODULES=text2vec-transformers"), nil
	})
	idx = getIndex(t, ns, "besluiten")
	sr, ready := condition(idx, ragopsv1alpha1.ConditionServingReady), condition(idx, ragopsv1alpha1.ConditionReady)
	if sr == nil || sr.Status != metav1.ConditionFalse || sr.Reason != controllers.ReasonTransformersModuleMissing {
		t.Errorf("Index ServingReady %+v, want False TransformersModuleMissing", sr)
	}
	if ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Index Ready %+v: ServingReady must not change it", ready)
	}
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: "served"}); err != nil || len(jobs.Items) != 0 {
		t.Fatalf("%d Jobs (%v) for an Evaluation that cannot embed its queries", len(jobs.Items), err)
	}
}

// On a Weaviate with text2vec-transformers and a revision wired to its model server, a
// Hybrid Evaluation with spec.queryEmbedding Weaviate starts a Job whose plan sends query
// text (queryEmbedding Weaviate, hybrid alpha kept) and mounts no query model.
func TestQueryEmbeddingWeaviateJobMountsNoModel(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	ns := newNamespace(t)
	ctx := context.Background()
	dep, rev, _ := buildWired(t, srv, ns, "")
	setReadyReplicas(t, dep, 1)
	waitActive(t, ns, "besluiten", rev.Name)
	if err := env.Client.Create(ctx, servedEvaluation(ns, "served", ragopsv1alpha1.ModeHybrid)); err != nil {
		t.Fatal(err)
	}
	job := evaluationJob(t, ns, "served")
	var p plan.Evaluate
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.QueryEmbedding != ragopsv1alpha1.QueryEmbeddingWeaviate || p.ModelDir != "" || p.Collection != rev.Collection || p.Alpha != workload.DefaultHybridAlpha {
		t.Errorf("plan %+v: want queryEmbedding Weaviate, no model folder, collection %s, alpha %v", p, rev.Collection, workload.DefaultHybridAlpha)
	}
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == "model" {
			t.Errorf("the Job mounts the query model %+v; Weaviate embeds the queries", v)
		}
	}
}
