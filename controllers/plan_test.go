package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// Defect 5: a Job deleted any other way than by the controller was recreated with its old
// plan ConfigMap: shards 4 -> 2, then kubectl delete job, ran 2 pods of a 4-shard plan.
func TestRecreatedJobGetsItsOwnPlan(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Embedder.Shards = 4 })
	name := buildJobOf(t, ns)
	job := waitJob(t, ns, name)
	var idx ragopsv1alpha1.Index
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Spec.Embedder.Shards = 2
	if err := env.Client.Update(ctx, &idx); err != nil {
		t.Fatal(err)
	}
	// Delete the Job only once the controller has seen the change: a reconcile from the cache's
	// older copy would rightly recreate it with 4 shards (the next one fixes it).
	eventually(t, 30*time.Second, "the change observed", func() (bool, error) {
		got := getIndex(t, ns, "besluiten")
		return got.Status.ObservedGeneration == idx.Generation, nil
	})
	// kubectl delete job (the plan ConfigMap stays: envtest has no garbage collector).
	if err := env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	var again batchv1.Job
	eventually(t, 30*time.Second, "the Job recreated", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &again)
		return err == nil && again.UID != job.UID, nil
	})
	raw := planOf(t, ns, name)
	var p plan.Build
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	if *again.Spec.Completions != 2 || p.Shards != 2 {
		t.Fatalf("recreated Job has %d completions and its plan %d shards, want 2 and 2", *again.Spec.Completions, p.Shards)
	}
	var want string
	for _, e := range again.Spec.Template.Spec.Containers[0].Env {
		if e.Name == plan.EnvPlanSHA256 {
			want = e.Value
		}
	}
	if want != plan.SHA256([]byte(raw)) {
		t.Fatalf("Job expects plan SHA-256 %q, the ConfigMap's plan has %s", want, plan.SHA256([]byte(raw)))
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	owned := false
	for _, o := range cm.OwnerReferences {
		owned = owned || o.UID == again.UID
	}
	if !owned {
		t.Errorf("plan ConfigMap owners %v do not include its Job %s", cm.OwnerReferences, again.UID)
	}
}

// Defect 6: generated names over 63 characters: a sync Job of a 32+ character Index after a
// retry, and the owner label of an object whose name is over 63 characters.
func TestGeneratedNamesAtTheMaximumLengths(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	long := strings.Repeat("archief-", 12) + "raad" // 100 characters
	docs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: map[string]string{"a.md": "# Beslispunt\nDe raad besluit.", "b.md": "# Motivering\nHet past."}}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
	strategy, idx := strategyAndIndex(ns)
	idx.Name = long[:63]
	for _, o := range []client.Object{docs, corpus, strategy, idx} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	var job batchv1.Job
	eventually(t, 30*time.Second, "a build Job of the 63-character Index", func() (bool, error) {
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			if metav1.IsControlledBy(&j, idx) {
				job = j
				return true, nil
			}
		}
		return false, nil
	})
	for what, v := range map[string]string{"Job name": job.Name, "owner label": job.Labels[workload.LabelOwner]} {
		if errs := validation.IsDNS1123Label(v); len(errs) > 0 && what == "Job name" {
			t.Errorf("%s %q: %v", what, v, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("%s %q is no label value: %v", what, v, errs)
		}
	}
	// An Evaluation with a 100-character name gets its Job, owner label bounded.
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: long},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: idx.Name},
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	rev, coll := "", ""
	eventually(t, 30*time.Second, "building revision", func() (bool, error) {
		got := getIndex(t, ns, idx.Name)
		rev = got.Status.Revision
		for _, r := range got.Status.Revisions {
			coll = r.Collection
		}
		return rev != "" && coll != "", nil
	})
	writeChunks(t, coll, rev)
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 6, Tokens: 600, Seconds: 2})
	finishJob(t, &job, 0, string(res))
	eventually(t, 30*time.Second, "the Evaluation's Job", func() (bool, error) {
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			if metav1.IsControlledBy(&j, ev) {
				return len(validation.IsValidLabelValue(j.Labels[workload.LabelOwner])) == 0 && len(j.Name) <= 63, nil
			}
		}
		return false, nil
	})
}
