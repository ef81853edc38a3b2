package controllers

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// TestModelServerURLs: by default collections are wired to (and /meta is read from) the
// Service's DNS name; with ModelServerURLs ClusterIP to http://CLUSTERIP:8080, and a server
// whose Service has no ClusterIP yet is neither wired (an error: the build waits) nor counted
// ready.
func TestModelServerURLs(t *testing.T) {
	ctx := context.Background()
	idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "ix", Namespace: "ns"}}
	idx.Spec.Model = ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2"}
	idx.Spec.Weaviate.URL = "http://weaviate.test.serving-url:8080"
	k := servingKeyFor(idx, nil, "")
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: k.name(), Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: k.name(), Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: "127.2.0.10"}}
	hash := ModelServerClientFunc(func(context.Context, string) (string, error) { return "h", nil })
	st := &indexState{idx: idx}
	// Weaviate has the module (a fresh reading): no store is asked.
	reconciler := func(objs ...client.Object) *IndexReconciler {
		r := &IndexReconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), Options: Options{ModelServers: hash}}
		r.modules.store(idx.Spec.Weaviate.URL, true)
		return r
	}

	dns := reconciler(dep, svc)
	if got, err := dns.modelServerFor(ctx, st, nil, false); err != nil || got != "http://"+k.name()+".ns.svc:8080" {
		t.Errorf("default: modelServerFor = %q (%v), want the Service's DNS name", got, err)
	}

	ip := reconciler(dep, svc)
	ip.Options.ModelServerURLs = ModelServerClusterIP
	if got, err := ip.modelServerFor(ctx, st, nil, false); err != nil || got != "http://127.2.0.10:8080" {
		t.Errorf("ClusterIP: modelServerFor = %q (%v), want http://127.2.0.10:8080", got, err)
	}
	if s, err := ip.readServer(ctx, "ns", k, ""); err != nil || s.endpoint != "http://127.2.0.10:8080" || s.ready != 1 || s.modelHash != "h" {
		t.Errorf("ClusterIP: readServer = %+v (%v), want the ClusterIP endpoint, 1 ready, hash h", s, err)
	}

	noSvc := reconciler(dep)
	noSvc.Options.ModelServerURLs = ModelServerClusterIP
	if got, err := noSvc.modelServerFor(ctx, st, nil, false); err == nil || !strings.Contains(err.Error(), "no ClusterIP yet") {
		t.Errorf("ClusterIP without a Service: modelServerFor = %q (%v), want an error", got, err)
	}
	if s, err := noSvc.readServer(ctx, "ns", k, ""); err != nil || s.ready != 0 {
		t.Errorf("ClusterIP without a Service: readServer = %+v (%v), want 0 ready", s, err)
	}
}
