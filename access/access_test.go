package access

import (
	"slices"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Issue 52, access rules: path globs with **, field values (text, list, number), groups a
// document names itself (S3 metadata as a comma list, front matter as a list), the union
// of matching rules, and the stated default for what no rule matches.
func TestGroupsOfADocument(t *testing.T) {
	spec := &ragopsv1alpha1.AccessSpec{Default: ragopsv1alpha1.AccessDeny, Rules: []ragopsv1alpha1.AccessRule{
		{Path: "besloten/**", Groups: []string{"raad"}},
		{Path: "**/personeel/*.pdf", Groups: []string{"hr"}},
		{Field: "frontmatter.classification", Values: []string{"vertrouwelijk"}, Groups: []string{"juridisch", "raad"}},
		{Field: "frontmatter.year", Values: []string{"2019"}, Groups: []string{"archief"}},
		{GroupsFrom: "source.s3.groups"},
		{GroupsFrom: "frontmatter.groups"},
	}}
	cases := []struct {
		path string
		meta map[string]any
		want []string
	}{
		{"openbaar/a.md", nil, []string{}},
		{"besloten/2020/a.md", nil, []string{"raad"}},
		{"besloten", nil, []string{"raad"}},
		{"x/y/personeel/dossier.pdf", nil, []string{"hr"}},
		{"personeel/dossier.pdf", nil, []string{"hr"}},
		{"personeel/dossier.md", nil, []string{}},
		{"a.md", map[string]any{"frontmatter.classification": "vertrouwelijk"}, []string{"juridisch", "raad"}},
		{"a.md", map[string]any{"frontmatter.classification": []any{"intern", "vertrouwelijk"}}, []string{"juridisch", "raad"}},
		{"a.md", map[string]any{"frontmatter.classification": "openbaar"}, []string{}},
		{"a.md", map[string]any{"frontmatter.year": float64(2019)}, []string{"archief"}},
		{"a.pdf", map[string]any{"source.s3.groups": " team-a, team-b,,"}, []string{"team-a", "team-b"}},
		{"a.md", map[string]any{"frontmatter.groups": []any{"x", "y"}}, []string{"x", "y"}},
		{"besloten/a.md", map[string]any{"frontmatter.groups": []any{"raad", "griffie"}}, []string{"griffie", "raad"}},
		{"a.md", map[string]any{"source.s3.groups": ""}, []string{}},
	}
	for _, tc := range cases {
		if got := Groups(spec, tc.path, tc.meta); !slices.Equal(got, tc.want) || got == nil {
			t.Errorf("Groups(%q, %v) = %#v, want %#v", tc.path, tc.meta, got, tc.want)
		}
	}
	spec.Default = ragopsv1alpha1.AccessPublic
	if got := Groups(spec, "openbaar/a.md", nil); !slices.Equal(got, []string{ragopsv1alpha1.PublicGroup}) {
		t.Errorf("default Public: %v", got)
	}
	if got := Groups(spec, "besloten/a.md", nil); !slices.Equal(got, []string{"raad"}) {
		t.Errorf("a matched document does not get the default too: %v", got)
	}
	if Groups(nil, "a", nil) != nil || Key(nil) != "" {
		t.Error("no spec: no groups and no key")
	}
	if Revision("abc", nil) != "abc" || Revision("", spec) != "" {
		t.Error("no rules (or no listing yet): the content revision")
	}
	rev := Revision("abc", spec)
	k := Key(spec)
	spec.Rules[0].Groups = []string{"raad", "griffie"}
	if len(k) != 16 || Key(spec) == k {
		t.Errorf("key %q does not change with the rules (%q)", k, Key(spec))
	}
	if r := Revision("abc", spec); len(r) != 12 || r == rev || r == "abc" {
		t.Errorf("corpus revision %q does not change with the rules (%q)", r, rev)
	}
}
