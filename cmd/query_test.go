package cmd_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
)

// `ragops query` as a user runs it: the kubeconfig leads to the Index (envtest), its
// spec.weaviate to a real Weaviate, the alias to a revision collection whose query model is a
// running ragops serve; -o json prints the same top chunks as nearVector with the embedder's
// own query vector, and the table names every document.
func TestQueryCommandThroughTheKubeconfig(t *testing.T) {
	dir := servingtest.ModelDir(t, servingtest.EnvMiniLM)
	env := testenv.StartTest(t)
	st := servingtest.StartStack(t, dir, "shop", "docs", 60)
	wv, store, srv, idx := st.Weaviate, st.Store, st.Server, st.Index

	ctx := t.Context()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	ix := &ragopsv1alpha1.Index{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "docs"},
		Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "scifact"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "whole"},
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
		},
	}
	if err := env.Client.Create(ctx, ix); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	rc := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData, Token: rc.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "shop"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	text := idx.Queries[0].Text
	qv, err := srv.Model.EmbedQueries(ctx, []string{text})
	if err != nil {
		t.Fatal(err)
	}
	want, err := store.Search(ctx, idx.Alias, vectorstore.Query{Mode: vectorstore.ModeDense, Vector: qv[0], Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		c := cmd.NewRoot()
		var out, errb bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&errb)
		c.SetArgs(append([]string{"query", "--kubeconfig", kubeconfig}, args...))
		err := c.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run("--index", "docs", "-k", "3", "-o", "json", text) // namespace from the context
	if err != nil {
		t.Fatal(err)
	}
	var res []query.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(res) != 3 {
		t.Fatalf("%d results:\n%s", len(res), out)
	}
	for i := range res {
		if res[i].DocID != want[i].DocID || res[i].Rank != i+1 || res[i].Revision != "r1" {
			t.Errorf("rank %d: %+v, nearVector with the embedder's vector has %s", i+1, res[i], want[i].DocID)
		}
	}
	out, err = run("-n", "shop", "--index", "docs", "--mode", "bm25", "-k", "2", text)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "RANK") {
		t.Errorf("bm25 table:\n%s", out)
	}
	if _, err := run("-n", "shop", "--index", "absent", text); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("an absent Index: %v", err)
	}
}
