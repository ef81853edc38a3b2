package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ragops/ragops/internal/testenv"
)

// yamlSeparator splits a multi-document YAML file.
var yamlSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// The manifests of `make demo-access` (hack/demo/access.sh asserts on what they build) pass
// admission: the Corpus's metadata fields and access rules, its Index, the personas'
// Namespaces and ServiceAccounts, in the order hack/demo.sh applies them.
func TestDemoAccessSamplesAreAccepted(t *testing.T) {
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join(testenv.ModuleRoot(), "config", "samples", "demo-access", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no config/samples/demo-access/*.yaml (%v)", err)
	}
	ensureNamespace(t, "ragops-demo-access") // hack/demo.sh creates it before applying
	kinds := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range yamlSeparator.Split(string(raw), -1) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v", filepath.Base(f), err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := env.Client.Create(ctx, u); err != nil {
				t.Errorf("%s: %s %s rejected: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
				continue
			}
			kinds[u.GetKind()]++
			t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
		}
	}
	for _, k := range []string{"Corpus", "Index", "ChunkingStrategy", "ServiceAccount"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the demo's manifests: %v", k, kinds)
		}
	}
}
