package compare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/internal/testenv"
)

// The results ConfigMap round trip through a real kube-apiserver: the encoded set of 10,000
// queries' worth of bytes is accepted in binaryData (the bound), and LoadConfigMap reads a
// real run back; a missing ConfigMap or one of another Evaluation is refused by name.
func TestLoadConfigMapFromAPIServer(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	blob, err := os.ReadFile(filepath.Join("..", "results", "testdata", "scifact-bm25-w48.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string, data []byte) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: results.ConfigMapName(name),
			Labels: map[string]string{"ragops.dev/evaluation": name}},
			BinaryData: map[string][]byte{results.ConfigMapKey: data}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	put("scifact-bm25-w48", blob)
	s, src, err := LoadConfigMap(ctx, env.Client, "default", "scifact-bm25-w48")
	if err != nil || len(s.Queries) != 300 || src != "configmap default/scifact-bm25-w48-results" {
		t.Fatalf("%s: %v", src, err)
	}
	if _, _, err := LoadConfigMap(ctx, env.Client, "default", "absent"); err == nil || !strings.Contains(err.Error(), "ConfigMap absent-results not found") {
		t.Fatalf("absent: %v", err)
	}
	put("renamed", blob) // holds the results of scifact-bm25-w48
	if _, _, err := LoadConfigMap(ctx, env.Client, "default", "renamed"); err == nil || !strings.Contains(err.Error(), `not "renamed"`) {
		t.Fatalf("other Evaluation's results: %v", err)
	}
	// The bound: a blob of MaxBytes fits a ConfigMap; one past 1 MiB does not.
	full := make([]byte, results.MaxBytes)
	put("at-the-bound", full)
	over := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "over"}, BinaryData: map[string][]byte{results.ConfigMapKey: make([]byte, 1<<20+1)}}
	if err := env.Client.Create(ctx, over); err == nil {
		t.Fatal("the API server took a ConfigMap over 1 MiB; the bound's reason is gone")
	}
}
