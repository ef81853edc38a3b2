package endpoint

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	accessspecs "github.com/ragops/ragops/access/specs"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/authz"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, direct reads bypass the filter: the endpoint searches an Index with the read-only
// key the operator provisioned (Secret accessspecs.ReaderSecret) instead of the Index's own
// key. Here the Index's own key is not valid on the RBAC Weaviate, so only the reader key
// finds the chunk.
func TestResolverSearchesWithTheProvisionedReaderKey(t *testing.T) {
	env := testenv.StartTest(t)
	const rootKey = "root-key-for-tests"
	wv := weaviatetest.StartWith(t, weaviatetest.Options{ExtraEnv: weaviatetest.RBACEnv(rootKey)})
	ctx := t.Context()
	const ns = "archief"
	root, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr, APIKey: rootKey})
	if err != nil {
		t.Fatal(err)
	}
	collection, _ := vectorstore.CollectionName(ns, "besluiten", "r1")
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	if err := root.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: collection, Revision: "r1", Dimensions: 4, Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat}}); err != nil {
		t.Fatal(err)
	}
	text := "besluit over windenergie"
	if err := root.Upsert(ctx, collection, []vectorstore.Chunk{{DocID: "a.md", End: len(text), Text: text, DocHash: "h", Vector: []float32{1, 0, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := root.SetAlias(ctx, alias, collection); err != nil {
		t.Fatal(err)
	}
	key, err := authz.EnsureReader(ctx, root.Client(), alias, []string{collection}, false)
	if err != nil {
		t.Fatal(err)
	}

	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weaviate"}, Data: map[string][]byte{"apiKey": []byte("not-a-key")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: accessspecs.ReaderSecret("besluiten")}, Data: map[string][]byte{accessspecs.ReaderSecretKey: []byte(key)}},
		&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Name: "besluiten", Namespace: ns}, Spec: ragopsv1alpha1.CorpusSpec{
			PVC: &ragopsv1alpha1.PVCSource{ClaimName: "docs"}, Access: accessSpec("raad")}},
		&ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "besluiten", Namespace: ns}, Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"}, StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "s"},
			Model: ragopsv1alpha1.ModelSpec{Name: "m", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "models"}},
			Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr,
				APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "weaviate", Key: "apiKey"}}}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	target, err := (&KubeResolver{Client: env.Client, Namespace: ns}).Resolve(ctx, "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	hits, err := target.Store.Search(ctx, target.Alias, vectorstore.Query{Mode: vectorstore.ModeBM25, Text: "windenergie", Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search through the resolved target: %d hits, %v (want the reader key's 1 hit)", len(hits), err)
	}
}
