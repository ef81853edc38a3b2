package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
)

// Issue 52, access: spec.access must state its default, and each rule names exactly one of
// path, field (with values) or groupsFrom, with groups unless it is groupsFrom; a well-formed
// access block is accepted.
func TestCorpusAccessRulesAreCheckedAtAdmission(t *testing.T) {
	rule := func(m map[string]any) mutation {
		return set("spec.access", map[string]any{"default": "Deny", "rules": []any{m}})
	}
	cases := []struct {
		name string
		edit mutation
		want []string
	}{
		{"no default", set("spec.access", map[string]any{"rules": []any{map[string]any{"path": "a/**", "groups": []any{"x"}}}}),
			[]string{"spec.access.default", "Required value"}},
		{"unknown default", set("spec.access", map[string]any{"default": "Allow"}),
			[]string{"spec.access.default", "Unsupported value"}},
		{"two selectors", rule(map[string]any{"path": "a/**", "groupsFrom": "source.s3.groups"}),
			[]string{"spec.access.rules[0]", "exactly one of path, field or groupsFrom"}},
		{"no selector", rule(map[string]any{"groups": []any{"x"}}),
			[]string{"spec.access.rules[0]", "exactly one of path, field or groupsFrom"}},
		{"path without groups", rule(map[string]any{"path": "a/**"}),
			[]string{"spec.access.rules[0].groups", "groups is required"}},
		{"groupsFrom with groups", rule(map[string]any{"groupsFrom": "frontmatter.groups", "groups": []any{"x"}}),
			[]string{"spec.access.rules[0].groups", "takes its groups from the document"}},
		{"field without values", rule(map[string]any{"field": "frontmatter.classification", "groups": []any{"x"}}),
			[]string{"spec.access.rules[0].values", "field and values go together"}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, "ragops_v1alpha1_corpus.yaml")
			ensureNamespace(t, u.GetNamespace())
			u.SetName("access-" + strings.ReplaceAll(tc.name, " ", "-"))
			tc.edit(u.Object)
			requireRejected(t, ctx, u, tc.want)
		})
	}
	u := loadSample(t, "ragops_v1alpha1_corpus.yaml")
	u.SetName("access-ok")
	set("spec.access", map[string]any{"default": "Public", "rules": []any{
		map[string]any{"path": "besloten/**", "groups": []any{"raad"}},
		map[string]any{"field": "frontmatter.classification", "values": []any{"vertrouwelijk"}, "groups": []any{"juridisch"}},
		map[string]any{"groupsFrom": "source.s3.groups"},
	}})(u.Object)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("well-formed access rejected: %v", err)
	}
	_ = env.Client.Delete(ctx, u)
}
