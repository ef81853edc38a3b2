package controllers_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/testpki"
)

// caFixture is fixture behind a TLS proxy whose CA bundle the Index reads from "wv-ca", a
// Secret (inSecret) or a ConfigMap: what its cleanup needs to reach Weaviate (the test
// Weaviate has no API keys; a key Secret is held the same way). It returns the CA object and
// the collection of the built, active Index "besluiten".
func caFixture(t *testing.T, ns string, inSecret bool) (ca client.Object, collection string) {
	t.Helper()
	ctx := context.Background()
	authority := testpki.NewCA(t, "weaviate-cleanup-ca")
	cert := authority.Serving(t)
	rest := testpki.NewProxy(t, wv.HTTPAddr, cert, "http/1.1")
	grpc := testpki.NewProxy(t, wv.GRPCAddr, cert, "h2")
	ref := &ragopsv1alpha1.SecretKeySelector{Name: "wv-ca", Key: "ca.crt"}
	src := &ragopsv1alpha1.CABundleSource{ConfigMapKeyRef: ref}
	ca = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv-ca"}, Data: map[string]string{"ca.crt": string(authority.PEM)}}
	if inSecret {
		src = &ragopsv1alpha1.CABundleSource{SecretKeyRef: ref}
		ca = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv-ca"}, Data: map[string][]byte{"ca.crt": authority.PEM}}
	}
	if err := env.Client.Create(ctx, ca); err != nil {
		t.Fatal(err)
	}
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "https://" + rest.Addr, GRPCAddress: grpc.Addr, CABundle: src}
	})
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	return ca, c1
}

func finalizersOf(t *testing.T, o client.Object) ([]string, bool) {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o)
	if apierrors.IsNotFound(err) {
		return nil, false
	} else if err != nil {
		t.Fatal(err)
	}
	return o.GetFinalizers(), true
}

// Defect 7 of issue 32: in a namespace deletion the API key Secret and the CA bundle are deleted
// with the Index; they stay readable (held by CleanupFinalizer) until the Index's collections
// are gone, and go right after.
func TestCleanupCredentialsOutliveTheIndexInANamespaceDeletion(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ca, c1 := caFixture(t, ns, true)
	for _, o := range []client.Object{ca} {
		eventually(t, 20*time.Second, "the cleanup hold on "+o.GetName(), func() (bool, error) {
			f, _ := finalizersOf(t, o)
			return slices.Contains(f, controllers.CleanupFinalizer), nil
		})
	}
	// What a namespace deletion does (envtest runs no namespace controller): delete everything,
	// the credentials first.
	for _, o := range []client.Object{ca, getIndex(t, ns, "besluiten")} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "Index gone", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, err := directStore(t).Collection(ctx, c1); err == nil {
		t.Errorf("collection %s left behind", c1)
	}
	for _, o := range []client.Object{ca} {
		eventually(t, 20*time.Second, o.GetName()+" released and gone", func() (bool, error) {
			_, exists := finalizersOf(t, o)
			return !exists, nil
		})
	}
}

// Defect 7 of issue 32: a cleanup whose CA bundle (or API key Secret) is gone says so
// (DeletionBlocked names it) instead of failing with TLS errors (or 401s), and completes once
// it is back.
func TestCleanupBlockedOnAMissingKeyNamesIt(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	key, c1 := caFixture(t, ns, false)
	eventually(t, 20*time.Second, "the cleanup hold", func() (bool, error) {
		f, _ := finalizersOf(t, key)
		return slices.Contains(f, controllers.CleanupFinalizer), nil
	})
	// The hold stripped by hand (or an Index from before the hold): the ConfigMap goes at once.
	if err := env.Client.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, exists := finalizersOf(t, key); !exists {
		t.Fatal("the held ConfigMap went at once")
	}
	key.SetFinalizers(nil)
	if err := env.Client.Update(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, getIndex(t, ns, "besluiten")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "DeletionBlocked naming the ConfigMap", func() (bool, error) {
		c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionDeletionBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == controllers.ReasonCleanupFailed &&
			strings.Contains(c.Message, `ConfigMap "wv-ca"`) && strings.Contains(c.Message, "restore it"), nil
	})
	if _, err := directStore(t).Collection(ctx, c1); err != nil {
		t.Fatalf("collection %s deleted without its key: %v", c1, err)
	}
	restored := key.(*corev1.ConfigMap).DeepCopy()
	restored.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "wv-ca"}
	if err := env.Client.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Index gone once the CA bundle is back", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, err := directStore(t).Collection(ctx, c1); err == nil {
		t.Errorf("collection %s left behind", c1)
	}
}

// An Index that stops naming its CA bundle releases it.
func TestCleanupHoldIsReleasedWhenNoIndexNamesIt(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	key, _ := caFixture(t, ns, false)
	eventually(t, 20*time.Second, "the cleanup hold", func() (bool, error) {
		f, _ := finalizersOf(t, key)
		return slices.Contains(f, controllers.CleanupFinalizer), nil
	})
	idx := getIndex(t, ns, "besluiten")
	idx.Spec.Weaviate.CABundle = nil
	if err := env.Client.Update(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the hold released", func() (bool, error) {
		f, exists := finalizersOf(t, key)
		return exists && !slices.Contains(f, controllers.CleanupFinalizer), nil
	})
}
