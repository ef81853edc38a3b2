package packaging

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/testenv"
)

// TestWatchNamespacesLimitsTheManager runs the manager binary with --watch-namespaces (the
// chart's watchNamespaces) naming one of two namespaces, each with a ConfigMap Corpus: the
// watched one's Corpus becomes Ready, the other one's, created first, is never reconciled.
func TestWatchNamespacesLimitsTheManager(t *testing.T) {
	admin := controlPlane(t).Client
	ctx := context.Background()
	var ns [2]*corev1.Namespace
	for i := range ns {
		ns[i] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "watch-"}}
		if err := admin.Create(ctx, ns[i]); err != nil {
			t.Fatal(err)
		}
	}
	watched, other := ns[0].Name, ns[1].Name
	corpus := func(namespace string) *ragopsv1alpha1.Corpus {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "docs"}, Data: map[string]string{"a.md": "# A\nText."}}
		c := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "docs"},
			Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
		for _, o := range []client.Object{cm, c} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	unwatchedCorpus := corpus(other) // exists before the manager starts
	startManager(t, "--watch-namespaces="+watched)
	watchedCorpus := corpus(watched)
	testenv.Eventually(t, 90*time.Second, "the watched namespace's Corpus Ready", func() (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(watchedCorpus), watchedCorpus)
		return err == nil && ready(watchedCorpus, watchedCorpus.Generation) && watchedCorpus.Status.Documents == 1, err
	})
	if err := admin.Get(ctx, client.ObjectKeyFromObject(unwatchedCorpus), unwatchedCorpus); err != nil {
		t.Fatal(err)
	}
	if len(unwatchedCorpus.Status.Conditions) != 0 || unwatchedCorpus.Status.ObservedGeneration != 0 || len(unwatchedCorpus.Finalizers) != 0 {
		t.Errorf("the Corpus in the unwatched namespace %s was reconciled: status %+v, finalizers %v", other, unwatchedCorpus.Status, unwatchedCorpus.Finalizers)
	}
}
