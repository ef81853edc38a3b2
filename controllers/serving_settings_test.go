package controllers_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
)

// TestAutoscaledServerKeepsReplicas (issue 55 item 15): a model server Deployment that a
// HorizontalPodAutoscaler scales keeps the autoscaler's replicas when the controller rewrites
// it (here: a second Index joins it).
func TestAutoscaledServerKeepsReplicas(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	dep := modelServer(t, ns)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
		}}
	if err := env.Client.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}
	// The autoscaler scales the Deployment to 3.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = ptr.To[int32](3)
	if err := env.Client.Patch(ctx, dep, patch); err != nil {
		t.Fatal(err)
	}
	_, second := strategyAndIndex(ns)
	second.Name = "tweede"
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the model server serving both Indexes", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.Annotations[controllers.AnnotationServerIndexes] == "2", err
	})
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 3 {
		t.Errorf("replicas %d after a second Index joined, want the autoscaler's 3", got)
	}
}

// containerArg returns the value after flag in the Deployment's first container's args.
func containerArg(dep *appsv1.Deployment, flag string) string {
	args := dep.Spec.Template.Spec.Containers[0].Args
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestSharedServerSettings (issue 55 item 14): two Indexes share a model server; the oldest
// asks 2 replicas and fp16, the newer neither. The server runs the oldest's replicas but
// the precision the revisions were built in (fp32: the newer Index's queries are not
// embedded in another precision); the newer Index's ServingSettingsApplied names the Index
// whose settings apply, the oldest's says its precision is not applied.
func TestSharedServerSettings(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Serving = ragopsv1alpha1.ServingSpec{Replicas: 2, Precision: ragopsv1alpha1.PrecisionFP16}
	})
	dep := modelServer(t, ns)
	eventually(t, 30*time.Second, "the oldest Index's server", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && ptr.Deref(dep.Spec.Replicas, 0) == 2, err
	})
	_, second := strategyAndIndex(ns)
	second.Name = "tweede"
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the model server serving both Indexes", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.Annotations[controllers.AnnotationServerIndexes] == "2", err
	})
	eventually(t, 60*time.Second, "the server in the precision the revisions were built in", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && containerArg(dep, "--precision") == "fp32", err
	})
	if got := ptr.Deref(dep.Spec.Replicas, 0); got != 2 {
		t.Errorf("replicas %d, want the oldest Index's 2", got)
	}
	settings := func(name string) *metav1.Condition {
		var c *metav1.Condition
		eventually(t, 60*time.Second, name+" ServingSettingsApplied=False", func() (bool, error) {
			c = condition(getIndex(t, ns, name), ragopsv1alpha1.ConditionServingSettingsApplied)
			return c != nil && c.Status == metav1.ConditionFalse, nil
		})
		return c
	}
	if c := settings("tweede"); c.Reason != controllers.ReasonSharedServerSettings || !strings.Contains(c.Message, "Index besluiten") ||
		!strings.Contains(c.Message, "replicas 2 (asks 1)") || !strings.Contains(c.Message, dep.Name) {
		t.Errorf("tweede ServingSettingsApplied %+v: want the server, Index besluiten and its replicas named", c)
	}
	if c := settings("besluiten"); !strings.Contains(c.Message, "precision fp16 is not applied") {
		t.Errorf("besluiten ServingSettingsApplied %+v: want its precision named as not applied", c)
	}
}

// TestImagePathServerPinsItsImage (issue 55 item 16): the model server of a revision whose
// model is an imagePath runs the image the revision was built from (recorded as
// serverImage), also after the operator moves to another image and rewrites the Deployment.
func TestImagePathServerPinsItsImage(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	rev, _ := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", rev)
	if got := idx.Status.Revisions[0].ServerImage; got != "ragops:test" {
		t.Errorf("revision serverImage %q, want ragops:test", got)
	}
	dep := modelServer(t, ns)
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "ragops:test" {
		t.Fatalf("server image %s", img)
	}
	// The operator is upgraded.
	workerImage = "ragops:v2"
	restartManagerWith(t, nil)
	t.Cleanup(func() { workerImage = "ragops:test" }) // runs before the restart's cleanup
	base := getIndex(t, ns, "besluiten")
	patch := client.MergeFrom(base.DeepCopy())
	base.Spec.Serving.Replicas = 2
	if err := env.Client.Patch(ctx, base, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Deployment rewritten with 2 replicas", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && ptr.Deref(dep.Spec.Replicas, 0) == 2, err
	})
	for _, c := range append(dep.Spec.Template.Spec.InitContainers, dep.Spec.Template.Spec.Containers...) {
		if c.Image != "ragops:test" {
			t.Errorf("container %s runs %s after the upgrade, want the revision's ragops:test", c.Name, c.Image)
		}
	}
}

// TestClusterIPServiceOutlivesDisabledServing (issue 55 item 16): with ClusterIP URLs, turning
// serving off deletes the model server's Deployment but keeps its Service while a kept
// revision needs it, so turning serving on again serves at the ClusterIP the revision's
// collection was wired to.
func TestClusterIPServiceOutlivesDisabledServing(t *testing.T) {
	modelServerURLs = controllers.ModelServerClusterIP
	restartManagerWith(t, nil)
	t.Cleanup(func() { modelServerURLs = "" }) // runs before the restart's cleanup
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	rev, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", rev)
	dep := modelServer(t, ns)
	var svc corev1.Service
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &svc); err != nil {
		t.Fatal(err)
	}
	ip := svc.Spec.ClusterIP
	setServing := func(on bool) {
		ix := getIndex(t, ns, "besluiten")
		patch := client.MergeFrom(ix.DeepCopy())
		ix.Spec.Serving.Enabled = ptr.To(on)
		if err := env.Client.Patch(ctx, ix, patch); err != nil {
			t.Fatal(err)
		}
	}
	setServing(false)
	eventually(t, 60*time.Second, "the Deployment deleted", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{})
		return apierrors.IsNotFound(err), nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &svc); err != nil || svc.Spec.ClusterIP != ip {
		t.Fatalf("Service %s after serving was turned off: %v, ClusterIP %q (want %s kept)", dep.Name, err, svc.Spec.ClusterIP, ip)
	}
	setServing(true)
	modelServer(t, ns)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &svc); err != nil || svc.Spec.ClusterIP != ip {
		t.Errorf("Service after serving was turned on again: %v, ClusterIP %q, want %s", err, svc.Spec.ClusterIP, ip)
	}
}
