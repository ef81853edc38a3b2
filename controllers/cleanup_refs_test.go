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

// keyedFixture is fixture with spec.weaviate.apiKeySecretRef naming Secret "wv-key" and, behind
// a TLS proxy, a CA bundle ConfigMap "wv-ca" (the test Weaviate takes any key): a built,
// active Index "besluiten" and its collection.
func keyedFixture(t *testing.T, ns string) (key *corev1.Secret, ca *corev1.ConfigMap, collection string) {
	t.Helper()
	ctx := context.Background()
	key = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv-key"}, Data: map[string][]byte{"api-key": []byte("sleutel")}}
	authority := testpki.NewCA(t, "weaviate-cleanup-ca")
	cert := authority.Serving(t)
	rest := testpki.NewProxy(t, wv.HTTPAddr, cert, "http/1.1")
	grpc := testpki.NewProxy(t, wv.GRPCAddr, cert, "h2")
	ca = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv-ca"}, Data: map[string]string{"ca.crt": string(authority.PEM)}}
	for _, o := range []client.Object{key, ca} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Weaviate.URL, ix.Spec.Weaviate.GRPCAddress = "https://"+rest.Addr, grpc.Addr
		ix.Spec.Weaviate.APIKeySecretRef = &ragopsv1alpha1.SecretKeySelector{Name: "wv-key", Key: "api-key"}
		ix.Spec.Weaviate.CABundle = &ragopsv1alpha1.CABundleSource{ConfigMapKeyRef: &ragopsv1alpha1.SecretKeySelector{Name: "wv-ca", Key: "ca.crt"}}
	})
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	return key, ca, c1
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
	key, ca, c1 := keyedFixture(t, ns)
	for _, o := range []client.Object{key, ca} {
		eventually(t, 20*time.Second, "the cleanup hold on "+o.GetName(), func() (bool, error) {
			f, _ := finalizersOf(t, o)
			return slices.Contains(f, controllers.CleanupFinalizer), nil
		})
	}
	// What a namespace deletion does (envtest runs no namespace controller): delete everything,
	// the credentials first.
	for _, o := range []client.Object{key, ca, getIndex(t, ns, "besluiten")} {
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
	for _, o := range []client.Object{key, ca} {
		eventually(t, 20*time.Second, o.GetName()+" released and gone", func() (bool, error) {
			_, exists := finalizersOf(t, o)
			return !exists, nil
		})
	}
}

// Defect 7 of issue 32: a cleanup whose API key Secret is gone says so (DeletionBlocked names
// the Secret) instead of failing with 401s, and completes once the Secret is back.
func TestCleanupBlockedOnAMissingKeyNamesIt(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	key, _, c1 := keyedFixture(t, ns)
	eventually(t, 20*time.Second, "the cleanup hold", func() (bool, error) {
		f, _ := finalizersOf(t, key)
		return slices.Contains(f, controllers.CleanupFinalizer), nil
	})
	// The hold stripped by hand (or an Index from before the hold): the Secret goes at once.
	if err := env.Client.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	key.Finalizers = nil
	if err := env.Client.Update(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, getIndex(t, ns, "besluiten")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "DeletionBlocked naming the Secret", func() (bool, error) {
		c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionDeletionBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == controllers.ReasonCleanupFailed &&
			strings.Contains(c.Message, `spec.weaviate.apiKeySecretRef: Secret "wv-key" cannot be read`), nil
	})
	if _, err := directStore(t).Collection(ctx, c1); err != nil {
		t.Fatalf("collection %s deleted without its key: %v", c1, err)
	}
	restored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv-key"}, Data: map[string][]byte{"api-key": []byte("sleutel")}}
	if err := env.Client.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Index gone once the key is back", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, err := directStore(t).Collection(ctx, c1); err == nil {
		t.Errorf("collection %s left behind", c1)
	}
}

// An Index that stops naming a Secret releases it; one still named by another Index keeps it.
func TestCleanupHoldIsReleasedWhenNoIndexNamesIt(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	key, _, _ := keyedFixture(t, ns)
	eventually(t, 20*time.Second, "the cleanup hold", func() (bool, error) {
		f, _ := finalizersOf(t, key)
		return slices.Contains(f, controllers.CleanupFinalizer), nil
	})
	idx := getIndex(t, ns, "besluiten")
	idx.Spec.Weaviate.APIKeySecretRef = nil
	if err := env.Client.Update(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the hold released", func() (bool, error) {
		f, exists := finalizersOf(t, key)
		return exists && !slices.Contains(f, controllers.CleanupFinalizer), nil
	})
}
