package security

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testpki"
	"github.com/ragops/ragops/vectorstore"
)

// An Index on a Weaviate served over TLS with a private CA (TLS-terminating proxies in front
// of the test's Weaviate) goes Active: the manager trusts the CA bundle from a ConfigMap for
// REST and gRPC, and the build pod mounts the bundle. A bundle key that does not exist stalls
// the Index naming the field. An S3 Corpus with web identity gets a scan pod with an
// audience-bound projected token and still no API token, admitted under restricted.
func TestWeaviateCABundleAndS3IdentityInRestrictedPods(t *testing.T) {
	ctx := context.Background()
	ns := restrictedNamespace(t)
	ca := testpki.NewCA(t, "weaviate-private-ca")
	cert := ca.Serving(t)
	rest := testpki.NewProxy(t, wv.HTTPAddr, cert, "http/1.1")
	grpc := testpki.NewProxy(t, wv.GRPCAddr, cert, "h2")

	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weaviate-key"}, StringData: map[string]string{"api-key": plantedWeaviate}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weaviate-ca"}, Data: map[string]string{"ca.crt": string(ca.PEM)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: map[string]string{
			"a.md": "# Beslispunt\nDe raad besluit.\n", "b.md": "# Motivering\nHet past.\n"}},
		&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Spec: ragopsv1alpha1.CorpusSpec{
			ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}},
		&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archief"}, Spec: ragopsv1alpha1.CorpusSpec{
			S3: &ragopsv1alpha1.S3Source{Endpoint: "s3.eu-west-1.amazonaws.com", Bucket: "archief", Identity: &ragopsv1alpha1.S3Identity{
				Type: ragopsv1alpha1.S3IdentityWebIdentity, WebIdentity: &ragopsv1alpha1.S3WebIdentity{
					STSEndpoint: "https://sts.eu-west-1.amazonaws.com", RoleARN: "arn:aws:iam::123456789012:role/ragops-reader"}}}}},
		&ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fixed"},
			Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}},
	}
	index := func(name, caKey string) *ragopsv1alpha1.Index {
		return &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "docs"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed"},
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "https://" + rest.Addr, GRPCAddress: grpc.Addr,
				APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "weaviate-key", Key: "api-key"},
				CABundle:        &ragopsv1alpha1.CABundleSource{ConfigMapKeyRef: &ragopsv1alpha1.SecretKeySelector{Name: "weaviate-ca", Key: caKey}}},
		}}
	}
	objs = append(objs, index("tls", "ca.crt"), index("wrong-key", "tls.crt"))
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}

	// A missing bundle key stalls the Index with the field named.
	eventually(t, 30*time.Second, "Index wrong-key Stalled", func() (bool, error) {
		var idx ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wrong-key"}, &idx)
		c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionStalled)
		return err == nil && c != nil && c.Reason == controllers.ReasonCABundleNotFound &&
			strings.Contains(c.Message, "spec.weaviate.caBundle.configMapKeyRef") && strings.Contains(c.Message, `"tls.crt"`), err
	})

	// The TLS Index builds: the build pod mounts the bundle and names it in its environment.
	var idx ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tls"}, &idx)
		return err == nil && idx.Status.Revision != "" && len(idx.Status.Revisions) > 0, err
	})
	rev := idx.Status.Revision
	build := waitJob(t, ns, "tls-"+rev+"-build")
	checkRestricted(t, build)
	ctr := build.Spec.Template.Spec.Containers[0]
	var caFile string
	for _, e := range ctr.Env {
		if e.Name == vectorstore.EnvCAFile {
			caFile = e.Value
		}
	}
	mounted := false
	for _, m := range ctr.VolumeMounts {
		mounted = mounted || (m.MountPath == path.Dir(caFile) && m.ReadOnly)
	}
	if caFile == "" || !mounted {
		t.Fatalf("build container env %s=%q, mounted read-only: %v", vectorstore.EnvCAFile, caFile, mounted)
	}
	var bp plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, build.Name)), &bp); err != nil {
		t.Fatal(err)
	}
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: rest.Addr, GRPCHost: grpc.Addr, Scheme: "https", CABundle: ca.PEM, APIKey: plantedWeaviate})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: bp.Collection, Revision: rev, Dimensions: 4}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = store.DeleteAlias(context.Background(), idx.Status.Alias)
		_ = store.DeleteCollection(context.Background(), bp.Collection)
	})
	if err := store.Upsert(ctx, bp.Collection, []vectorstore.Chunk{
		{DocID: "a.md", End: 10, Text: "a", Vector: []float32{1, 0, 0, 0}}, {DocID: "b.md", End: 10, Text: "b", Vector: []float32{0, 1, 0, 0}},
	}); err != nil {
		t.Fatal(err)
	}
	_, restFailedBefore := rest.Handshakes()
	runPod(t, build, mustJSON(plan.BuildResult{Documents: 2, Chunks: 2, Tokens: 20, Seconds: 1}))
	eventually(t, 30*time.Second, "the revision active through TLS", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tls"}, &idx)
		c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionReady)
		return err == nil && idx.Status.ActiveRevision == rev && c != nil && c.Status == metav1.ConditionTrue, err
	})
	if target, found, err := store.GetAlias(ctx, idx.Status.Alias); err != nil || !found || target != bp.Collection {
		t.Errorf("alias %s -> %q (found %v, err %v), want %s", idx.Status.Alias, target, found, err, bp.Collection)
	}
	protos, failed := rest.Handshakes()
	if len(protos) == 0 || failed != restFailedBefore {
		t.Errorf("REST proxy: %d completed handshakes, %d failed (before %d): the manager must have verified the certificate", len(protos), failed, restFailedBefore)
	}

	// The web identity scan pod: a projected token for the STS audience, no API token.
	scan := waitJob(t, ns, "archief-scan-")
	checkRestricted(t, scan)
	var tokenVol *corev1.ServiceAccountTokenProjection
	for _, v := range scan.Spec.Template.Spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					tokenVol = s.ServiceAccountToken
				}
			}
		}
	}
	if tokenVol == nil || tokenVol.Audience != "sts.amazonaws.com" || tokenVol.ExpirationSeconds == nil || *tokenVol.ExpirationSeconds != 3600 {
		t.Fatalf("scan pod token projection %+v, want audience sts.amazonaws.com for 3600 s", tokenVol)
	}
	var tokenEnv string
	for _, e := range scan.Spec.Template.Spec.Containers[0].Env {
		if e.Name == plan.EnvS3WebIdentityTokenFile {
			tokenEnv = e.Value
		}
		if e.Name == plan.EnvS3AccessKey || e.Name == plan.EnvS3SecretKey {
			t.Errorf("a web identity scan pod has static key variable %s", e.Name)
		}
	}
	if sa := scan.Spec.Template.Spec.ServiceAccountName; sa != "default" {
		t.Errorf("web identity scan pod runs as ServiceAccount %q, want default (whose token the role trusts)", sa)
	}
	if tokenEnv != path.Join(plan.S3IdentityDir, "token") {
		t.Errorf("%s=%q, want the projected token's path", plan.EnvS3WebIdentityTokenFile, tokenEnv)
	}
	runPod(t, scan, `{"documents":0,"revision":"e3b0c442"}`)
}
