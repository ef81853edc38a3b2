package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/testpki"
)

// Defect 8: a CA bundle created after the Index stopped it at CABundleNotFound until the
// spec changed: nothing mapped the ConfigMap back to the Index.
func TestCABundleCreatedLaterResumesTheIndex(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ca := testpki.NewCA(t, "weaviate-late-ca")
	cert := ca.Serving(t)
	rest := testpki.NewProxy(t, wv.HTTPAddr, cert, "http/1.1")
	grpc := testpki.NewProxy(t, wv.GRPCAddr, cert, "h2")
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "https://" + rest.Addr, GRPCAddress: grpc.Addr,
			CABundle: &ragopsv1alpha1.CABundleSource{ConfigMapKeyRef: &ragopsv1alpha1.SecretKeySelector{Name: "weaviate-ca", Key: "ca.crt"}}}
	})
	eventually(t, 30*time.Second, "Stalled CABundleNotFound", stalledWith(t, ns, controllers.ReasonCABundleNotFound, `ConfigMap "weaviate-ca" not found`))
	// Let every other event that reconciles the Index (its Corpus syncing) pass first.
	eventually(t, 30*time.Second, "Corpus Ready", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c)
		return err == nil && conditions.IsReady(&c), err
	})
	time.Sleep(2 * time.Second)
	eventually(t, 5*time.Second, "still Stalled CABundleNotFound", stalledWith(t, ns, controllers.ReasonCABundleNotFound, `ConfigMap "weaviate-ca" not found`))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weaviate-ca"}, Data: map[string]string{"ca.crt": string(ca.PEM)}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// No spec change: the ConfigMap's creation alone resumes the Index, which builds and serves.
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
}
