package controllers_test

// The manager: one Weaviate attempt per reconcile, and a cache of ragops Pods only (review
// findings of issue 16, defects 6 and 8).

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/workload"
)

// Defect 6: a reconciler's Weaviate call makes one attempt (the work queue backs off), not
// the workers' several retries.
func TestReconcilerStoreMakesOneAttempt(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/schema/") { // the collection lookup itself
			calls.Add(1)
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	store, err := controllers.NewWeaviateStore(ragopsv1alpha1.WeaviateSpec{URL: srv.URL, GRPCAddress: "127.0.0.1:1"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CollectionExists(context.Background(), "Rag_x"); err == nil {
		t.Fatal("CollectionExists against a 503 succeeded")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d schema requests for one call, want 1", n)
	}
	cfg, _ := controllers.StoreConfig(ragopsv1alpha1.WeaviateSpec{URL: srv.URL}, "", nil)
	if cfg.Timeout != controllers.StoreTimeout || controllers.StoreTimeout > 15*time.Second {
		t.Fatalf("request timeout %s, want %s (at most 15 s)", cfg.Timeout, controllers.StoreTimeout)
	}
}

// Defect 8: the manager caches only the Pods ragops made.
func TestManagerCachesOnlyRagopsPods(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	mk := func(name string, labels map[string]string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("theirs", map[string]string{"app": "web"})
	mk("ours", map[string]string{workload.LabelManagedBy: "ragops"})
	var pods corev1.PodList
	eventually(t, 30*time.Second, "our pod in the cache", func() (bool, error) {
		err := k8s.List(ctx, &pods, client.InNamespace(ns))
		for _, p := range pods.Items {
			if p.Name == "ours" {
				return true, nil
			}
		}
		return false, err
	})
	// Events arrive in order: "theirs" was created first and would be cached by now.
	for _, p := range pods.Items {
		if p.Name == "theirs" {
			t.Fatalf("the manager caches pods ragops did not make")
		}
	}
}

// Issue 56: the manager's cache keeps no managedFields, and of a Pod only its metadata, its
// node and its status (the controllers read a Job's pods for their phase and termination
// messages; the spec repeats the Job's template).
func TestManagerCacheDropsManagedFieldsAndPodSpecs(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ours := map[string]string{workload.LabelManagedBy: workload.ManagedBy}
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox",
		Env: []corev1.EnvVar{{Name: "A", Value: strings.Repeat("x", 256)}}}}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "j", Labels: ours},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: ours}, Spec: spec}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: ours}, Spec: spec}
	pod.Spec.NodeName = "node-1"
	for _, o := range []client.Object{job, pod} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		if len(o.GetManagedFields()) == 0 {
			t.Fatalf("the API server wrote no managedFields for %T %s: nothing to drop", o, o.GetName())
		}
	}
	var cj batchv1.Job
	var cp corev1.Pod
	eventually(t, 30*time.Second, "the Job and the Pod in the cache", func() (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), &cj); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &cp)
		return err == nil, client.IgnoreNotFound(err)
	})
	if len(cj.ManagedFields) > 0 || len(cp.ManagedFields) > 0 {
		t.Errorf("cached managedFields: Job %d entries, Pod %d; want none", len(cj.ManagedFields), len(cp.ManagedFields))
	}
	if len(cj.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("cached Job template containers %v, want the Job's spec kept", cj.Spec.Template.Spec.Containers)
	}
	if len(cp.Spec.Containers) > 0 || cp.Spec.NodeName != "node-1" || cp.Labels[workload.LabelManagedBy] != workload.ManagedBy {
		t.Errorf("cached Pod: containers %d, node %q, labels %v; want no containers, node-1 and its labels", len(cp.Spec.Containers), cp.Spec.NodeName, cp.Labels)
	}
}
