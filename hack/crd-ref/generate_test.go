package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const repo = "../.."

// TestReferenceIsUpToDate fails when docs/reference.md differs from what the generator
// writes for the current api/v1alpha1 (run hack/gen-crd-ref.sh).
func TestReferenceIsUpToDate(t *testing.T) {
	got, err := Generate(filepath.Join(repo, "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(repo, "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Fatal("docs/reference.md is stale: run hack/gen-crd-ref.sh and commit the result")
	}
}

var rowRE = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// section returns the field names of the table under "### name".
func section(md, name string) []string {
	i := strings.Index(md, "\n### "+name+"\n")
	if i < 0 {
		return nil
	}
	rest := md[i+len(name)+6:]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(rest, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// TestReferenceNamesEveryCRDProperty cross-checks the generator against controller-gen:
// the spec and status fields listed for each kind equal the properties of its generated CRD
// schema (config/crd/bases), inline structs flattened the same way.
func TestReferenceNamesEveryCRDProperty(t *testing.T) {
	md, err := Generate(filepath.Join(repo, "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(repo, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kind := crd.Spec.Names.Kind
		schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, part := range []string{"spec", "status"} {
			var want []string
			for p := range schema.Properties[part].Properties {
				want = append(want, p)
			}
			sort.Strings(want)
			got := section(string(md), kind+strings.ToUpper(part[:1])+part[1:])
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s.%s: reference lists %v, the CRD has %v", kind, part, got, want)
			}
		}
	}
}

func TestValidationSentences(t *testing.T) {
	for _, c := range []struct {
		markers []string
		want    string
	}{
		{[]string{"kubebuilder:default=Auto"}, "Default: `Auto`."},
		{[]string{"kubebuilder:validation:Enum=a;b"}, "One of: `a`, `b`."},
		{[]string{`kubebuilder:validation:XValidation:rule="self.a < self.b",message="overlap must be less than size"`}, "Rule: overlap must be less than size."},
		{[]string{"kubebuilder:validation:Minimum=1", "kubebuilder:validation:Maximum=8"}, "Minimum: `1`. Maximum: `8`."},
		{[]string{"optional", "listType=atomic"}, ""},
	} {
		if got := validation(c.markers); got != c.want {
			t.Errorf("validation(%q) = %q, want %q", c.markers, got, c.want)
		}
	}
}
