package query_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
)

func index(ns, name string, w ragopsv1alpha1.WeaviateSpec) *ragopsv1alpha1.Index {
	return &ragopsv1alpha1.Index{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "docs"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed"},
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			Weaviate:    w,
		},
	}
}

// Resolve reads the Index's spec.weaviate through the API server: URL, gRPC address, the API
// key from its Secret, the CA bundle from its ConfigMap, the alias and the active revision.
func TestResolve(t *testing.T) {
	env := testenv.StartTest(t)
	ctx, c := t.Context(), env.Client
	ns := "shop"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv"}, Data: map[string][]byte{"api-key": []byte("s3cret")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv-ca"}, Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n"}},
		index(ns, "plain", ragopsv1alpha1.WeaviateSpec{URL: "http://weaviate.db.svc:8080", GRPCAddress: "weaviate-grpc.db.svc:50051",
			APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "wv", Key: "api-key"}}),
		index(ns, "tls", ragopsv1alpha1.WeaviateSpec{URL: "https://weaviate.db.svc",
			CABundle: &ragopsv1alpha1.CABundleSource{ConfigMapKeyRef: &ragopsv1alpha1.SecretKeySelector{Name: "wv-ca", Key: "ca.crt"}}}),
		index(ns, "nokey", ragopsv1alpha1.WeaviateSpec{URL: "http://weaviate.db.svc:8080",
			APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "wv", Key: "token"}}),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var plain ragopsv1alpha1.Index
	c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, &plain)
	plain.Status.ActiveRevision = "abc123"
	if err := c.Status().Update(ctx, &plain); err != nil {
		t.Fatal(err)
	}

	got, err := query.Resolve(ctx, c, ns, "plain")
	if err != nil {
		t.Fatal(err)
	}
	alias, _ := vectorstore.AliasName(ns, "plain")
	if got.Alias != alias || got.Store.HTTPHost != "weaviate.db.svc:8080" || got.Store.GRPCHost != "weaviate-grpc.db.svc:50051" ||
		got.Store.Scheme != "http" || got.Store.APIKey != "s3cret" || got.ActiveRevision != "abc123" {
		t.Errorf("plain: %+v", got)
	}
	got, err = query.Resolve(ctx, c, ns, "tls")
	if err != nil {
		t.Fatal(err)
	}
	if got.Store.HTTPHost != "weaviate.db.svc:443" || got.Store.GRPCHost != "weaviate.db.svc:50051" || got.Store.Scheme != "https" ||
		string(got.Store.CABundle) != "-----BEGIN CERTIFICATE-----\n" || got.Store.APIKey != "" {
		t.Errorf("tls: %+v", got)
	}
	if _, err := query.Resolve(ctx, c, ns, "nokey"); err == nil || !strings.Contains(err.Error(), `no key "token"`) {
		t.Errorf("a missing secret key: %v", err)
	}
	if _, err := query.Resolve(ctx, c, ns, "absent"); !apierrors.IsNotFound(err) {
		t.Errorf("an absent Index: %v, want NotFound", err)
	}
}

// Run through the alias of a real Weaviate wired to ragops serve: dense (nearText) equals
// nearVector with the embedder's query vector, bm25 and hybrid answer, and Print shows every
// hit's document, span, heading and first words (table) or the whole record (JSON). A
// collection without a model server is refused for dense with a message naming bm25.
func TestRunAndPrint(t *testing.T) {
	dir := servingtest.ModelDir(t, servingtest.EnvMiniLM)
	st := servingtest.StartStack(t, dir, "shop", "docs", 60)
	store, srv, idx := st.Store, st.Server, st.Index
	ctx := t.Context()
	q := idx.Queries[0].Text
	qv, err := srv.Model.EmbedQueries(ctx, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	want, err := store.Search(ctx, idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Vector: qv[0], Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []vectorstore.Mode{vectorstore.ModeDense, vectorstore.ModeBM25, vectorstore.ModeHybrid} {
		hits, err := query.Run(ctx, store, idx.Alias, query.Request{Text: q, Mode: mode, K: 5, Alpha: 0.5})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(hits) != 5 {
			t.Fatalf("%s: %d hits, want 5", mode, len(hits))
		}
		if mode == vectorstore.ModeDense {
			for i := range hits {
				if hits[i].ID != want[i].ID {
					t.Fatalf("dense through the alias: rank %d is %s, nearVector with the embedder's vector has %s", i+1, hits[i].DocID, want[i].DocID)
				}
			}
		}
		var table bytes.Buffer
		if err := query.Print(&table, hits, query.FormatTable); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(table.String()), "\n")
		if len(lines) != 6 || !strings.HasPrefix(lines[0], "RANK") || !strings.Contains(lines[0], "HEADING") {
			t.Fatalf("%s table:\n%s", mode, table.String())
		}
		for i, h := range hits {
			words := strings.Fields(h.Text)[:3]
			for _, part := range []string{h.DocID, "[0," + strconv.Itoa(h.End) + ")", h.HeadingPath[0], strings.Join(words, " ")} {
				if !strings.Contains(lines[i+1], part) {
					t.Errorf("%s table row %d %q lacks %q", mode, i+1, lines[i+1], part)
				}
			}
		}
		var js bytes.Buffer
		if err := query.Print(&js, hits, query.FormatJSON); err != nil {
			t.Fatal(err)
		}
		var res []query.Result
		if err := json.Unmarshal(js.Bytes(), &res); err != nil || len(res) != 5 || res[0].Rank != 1 || res[0].DocID != hits[0].DocID ||
			res[0].Text != hits[0].Text || res[0].Revision != "r1" || res[0].End != hits[0].End {
			t.Errorf("%s json (%v):\n%s", mode, err, js.String())
		}
	}
	for in, want := range map[string]vectorstore.Mode{"dense": vectorstore.ModeDense, "BM25": vectorstore.ModeBM25, "hybrid": vectorstore.ModeHybrid} {
		if got, err := query.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := query.ParseMode("sparse"); err == nil {
		t.Error("mode sparse accepted")
	}
	if err := query.Print(&bytes.Buffer{}, want, "yaml"); err == nil {
		t.Error("output yaml accepted")
	}

	// A revision collection without a model server.
	name, _ := vectorstore.CollectionName("shop", "bare", "r1")
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: name, Revision: "r1", Dimensions: 384}); err != nil {
		t.Fatal(err)
	}
	alias, _ := vectorstore.AliasName("shop", "bare")
	if err := store.SetAlias(ctx, alias, name); err != nil {
		t.Fatal(err)
	}
	if _, err := query.Run(ctx, store, alias, query.Request{Text: q, Mode: vectorstore.ModeDense, K: 5}); err == nil || !strings.Contains(err.Error(), "--mode bm25") {
		t.Errorf("dense on a collection without a model server: %v", err)
	}
	if _, err := query.Run(ctx, store, "Missing_alias", query.Request{Text: q, Mode: vectorstore.ModeHybrid, K: 5}); err == nil || !strings.Contains(err.Error(), "no active revision") {
		t.Errorf("dense through a missing alias: %v", err)
	}
}
