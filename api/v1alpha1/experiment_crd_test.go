package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/admission"
	"github.com/ragops/ragops/internal/testenv"
)

const experimentSample = "demo-experiment/experiment.yaml"

// TestExperimentSampleIsAccepted creates the demo Experiment in the real kube-apiserver and
// admits it offline (internal/admission): both accept it, and the defaults land.
func TestExperimentSampleIsAccepted(t *testing.T) {
	ctx := context.Background()
	u := loadSample(t, experimentSample)
	ensureNamespace(t, u.GetNamespace())
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("rejected: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })

	var exp ragopsv1alpha1.Experiment
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, &exp); err != nil {
		t.Fatal(err)
	}
	if got := len(exp.Spec.Space.Strategies); got != 9 {
		t.Errorf("strategies = %d, want the archive's 9", got)
	}
	tpl := exp.Spec.Space.Strategies[4].Template
	if tpl == nil || tpl.Unit != ragopsv1alpha1.UnitTokens || len(tpl.Overlaps) != 1 || tpl.Overlaps[0] != 0 ||
		len(tpl.Late) != 1 || tpl.Late[0].Enabled {
		t.Errorf("template defaults (unit Tokens, overlaps [0], late [{enabled: false}]) = %+v", tpl)
	}
	if exp.Spec.LeaderboardSize != 10 || exp.Spec.Algorithm.Seed != 1 || exp.Spec.IndexTemplate.VectorIndex.Distance != "cosine" ||
		exp.Spec.Objective.K != 3 || exp.Spec.Dataset.Split != "dev" {
		t.Errorf("defaults: leaderboardSize=%d seed=%d distance=%q k=%d split=%q", exp.Spec.LeaderboardSize,
			exp.Spec.Algorithm.Seed, exp.Spec.IndexTemplate.VectorIndex.Distance, exp.Spec.Objective.K, exp.Spec.Dataset.Split)
	}

	raw, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "config", "crd", "bases", "ragops.dev_experiments.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := admission.New(raw, ragopsv1alpha1.GroupVersion.Version)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "config", "samples", experimentSample))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Admit(ctx, doc); err != nil {
		t.Errorf("offline admission refused the sample: %v", err)
	}
}

// objectName turns a test case's name into an object name.
func objectName(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// template returns an inline strategy template entry of the space.
func template(name string, fields map[string]any) map[string]any {
	t := map[string]any{"name": name}
	for k, v := range fields {
		t[k] = v
	}
	return map[string]any{"template": t}
}

func TestBadExperimentsAreRejected(t *testing.T) {
	fixedGrid := template("fixed", map[string]any{"types": []any{"Fixed"}, "sizes": []any{int64(256), int64(512)},
		"overlaps": []any{int64(0), int64(32), int64(64)}}) // 2 x 3 = 6 combinations
	twoModels := []any{
		map[string]any{"name": "a", "imagePath": "/models/a"},
		map[string]any{"name": "b", "imagePath": "/models/b"},
	}
	cases := []struct {
		name  string
		edits []mutation
		want  []string
	}{
		{"no strategies", []mutation{set("spec.space.strategies", []any{})},
			[]string{"spec.space.strategies", "should have at least 1 items"}},
		{"no models", []mutation{set("spec.space.models", []any{})},
			[]string{"spec.space.models", "should have at least 1 items"}},
		{"no modes", []mutation{set("spec.space.modes", []any{})},
			[]string{"spec.space.modes", "should have at least 1 items"}},
		{"template without sizes", []mutation{set("spec.space.strategies", []any{template("t", map[string]any{"types": []any{"Fixed"}, "sizes": []any{}})})},
			[]string{"spec.space.strategies[0].template.sizes", "should have at least 1 items"}},
		{"candidate with both a ref and a template", []mutation{set("spec.space.strategies", []any{map[string]any{
			"strategyRef": map[string]any{"name": "fixed-512"},
			"template":    map[string]any{"name": "t", "types": []any{"Fixed"}, "sizes": []any{int64(100)}},
		}})}, []string{"spec.space.strategies[0]", "exactly one of strategyRef and template must be set"}},
		{"empty candidate", []mutation{set("spec.space.strategies", []any{map[string]any{}})},
			[]string{"spec.space.strategies[0]", "exactly one of strategyRef and template must be set"}},
		{"grid above algorithm.maxTrials", []mutation{set("spec.space.strategies", []any{fixedGrid}), set("spec.space.models", twoModels),
			set("spec.algorithm.maxTrials", int64(11)), del("spec.budget")},
			[]string{"spec.algorithm.maxTrials", "the Grid space lists 12 trials", "more than algorithm.maxTrials (11"}},
		{"grid above budget.maxTrials", []mutation{set("spec.space.strategies", []any{fixedGrid, map[string]any{"strategyRef": map[string]any{"name": "x"}}}),
			set("spec.algorithm.maxTrials", int64(100)), set("spec.budget.maxTrials", int64(6)), del("spec.screening")},
			[]string{"spec.budget.maxTrials", "the Grid space lists 7 trials", "more than budget.maxTrials 6"}},
		{"grid above budget.maxTrials, screening topN and the baseline do not fit", []mutation{set("spec.space.strategies", []any{fixedGrid, map[string]any{"strategyRef": map[string]any{"name": "x"}}}),
			set("spec.algorithm.maxTrials", int64(100)), set("spec.budget.maxTrials", int64(3))},
			[]string{"spec.budget.maxTrials", "the Grid space lists 7 trials", "only screening.topN and the baseline must fit"}},
		{"grid above 1000 without maxTrials", []mutation{set("spec.space.strategies", []any{template("big", map[string]any{
			"types": []any{"Fixed", "Recursive", "Paragraph", "Sentence"}, "sizes": []any{int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), int64(7), int64(8), int64(9), int64(10), int64(11), int64(12), int64(13), int64(14), int64(15), int64(16)},
			"overlaps": []any{int64(0), int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), int64(7), int64(8), int64(9), int64(10), int64(11), int64(12), int64(13), int64(14), int64(15)}})}),
			del("spec.algorithm.maxTrials"), del("spec.budget")},
			[]string{"spec.algorithm.maxTrials", "the Grid space lists 1024 trials", "1000 when unset"}},
		{"random without maxTrials", []mutation{set("spec.algorithm", map[string]any{"type": "Random", "seed": int64(7)})},
			[]string{"spec.algorithm.maxTrials", "maxTrials is required when type is Random"}},
		{"random above budget.maxTrials", []mutation{set("spec.algorithm", map[string]any{"type": "Random", "maxTrials": int64(20)}), del("spec.screening")},
			[]string{"spec.algorithm.maxTrials", "algorithm.maxTrials must not exceed budget.maxTrials"}},
		{"unknown algorithm", []mutation{set("spec.algorithm.type", "Bayesian")},
			[]string{"spec.algorithm.type", "Unsupported value"}},
		{"unknown objective metric", []mutation{set("spec.objective.metric", "map")},
			[]string{"spec.objective.metric", "Unsupported value"}},
		{"objective k of zero", []mutation{set("spec.objective.k", int64(0))},
			[]string{"spec.objective.k", "should be greater than or equal to 1"}},
		{"alphas on a dense mode", []mutation{set("spec.space.modes", []any{map[string]any{"mode": "Dense", "alphas": []any{0.3}}})},
			[]string{"spec.space.modes[0].alphas", "alphas and fusions may only be set when mode is Hybrid"}},
		{"alpha above 1", []mutation{set("spec.space.modes", []any{map[string]any{"mode": "Hybrid", "alphas": []any{0.5, 1.5}}})},
			[]string{"spec.space.modes[0].alphas", "every alpha must be between 0 and 1"}},
		{"two models of one name", []mutation{set("spec.space.models", []any{
			map[string]any{"name": "a", "imagePath": "/models/a"}, map[string]any{"name": "a", "imagePath": "/models/b"}})},
			[]string{"spec.space.models", "model names must be unique"}},
		{"model with two sources", []mutation{set("spec.space.models", []any{
			map[string]any{"name": "a", "imagePath": "/models/a", "pvc": map[string]any{"claimName": "m"}}})},
			[]string{"spec.space.models[0]", "exactly one model source must be set"}},
		{"heading template without heading options", []mutation{set("spec.space.strategies", []any{template("h", map[string]any{"types": []any{"Fixed", "Heading"}, "sizes": []any{int64(256)}})})},
			[]string{"spec.space.strategies[0].template.heading", "heading is required when types has Heading"}},
		{"sliding template without stride", []mutation{set("spec.space.strategies", []any{template("s", map[string]any{"types": []any{"SlidingWindow"}, "sizes": []any{int64(256)}})})},
			[]string{"spec.space.strategies[0].template.slidingWindow", "slidingWindow is required when types has SlidingWindow"}},
		{"late window not above its overlap", []mutation{set("spec.space.strategies", []any{template("l", map[string]any{"types": []any{"Fixed"}, "sizes": []any{int64(256)},
			"late": []any{map[string]any{"enabled": true, "window": int64(128), "windowOverlap": int64(128)}}})})},
			[]string{"spec.space.strategies[0].template.late[0].windowOverlap", "windowOverlap must be less than window"}},
		{"template name with capitals", []mutation{set("spec.space.strategies", []any{template("Fixed", map[string]any{"types": []any{"Fixed"}, "sizes": []any{int64(256)}})})},
			[]string{"spec.space.strategies[0].template.name", "should match"}},
		{"screening fraction of 1", []mutation{set("spec.screening.fraction", 1.0)},
			[]string{"spec.screening.fraction", "fraction must be between 0 and 1 (exclusive)"}},
		{"screening topN of 0", []mutation{set("spec.screening.topN", int64(0))},
			[]string{"spec.screening.topN", "should be greater than or equal to 1"}},
		{"baseline model not in the space", []mutation{set("spec.baseline.model", "bge-small")},
			[]string{"spec.baseline.model", "baseline.model must name a model of space.models"}},
		{"unknown cleanup policy", []mutation{set("spec.cleanup", "DeleteAll")},
			[]string{"spec.cleanup", "Unsupported value"}},
		{"token budget of 0", []mutation{set("spec.budget.maxTokens", int64(0))},
			[]string{"spec.budget.maxTokens", "should be greater than or equal to 1"}},
		{"parallelism of 0", []mutation{set("spec.parallelism", int64(0))},
			[]string{"spec.parallelism", "should be greater than or equal to 1"}},
		{"negative maxFailedTrials", []mutation{set("spec.maxFailedTrials", int64(-1))},
			[]string{"spec.maxFailedTrials", "should be greater than or equal to 0"}},
		{"cross-namespace corpus", []mutation{set("spec.corpusRef.namespace", "other")},
			[]string{"spec.corpusRef.namespace", "cross-namespace references are not allowed"}},
		{"promotion without indexRef", []mutation{set("spec.promote", map[string]any{})},
			[]string{"spec.promote.indexRef", "Required value"}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, experimentSample)
			ensureNamespace(t, u.GetNamespace())
			u.SetName(objectName("bad-" + tc.name))
			for _, e := range tc.edits {
				e(u.Object)
			}
			requireRejected(t, ctx, u, tc.want)
		})
	}
}

// TestGoodExperimentVariantsAreAccepted: edits of the sample that stay inside the rules
// (a grid exactly at maxTrials, a Random draw from a larger space, hybrid-only options).
func TestGoodExperimentVariantsAreAccepted(t *testing.T) {
	fixedGrid := template("fixed", map[string]any{"types": []any{"Fixed", "Recursive"}, "sizes": []any{int64(256), int64(512)},
		"late": []any{map[string]any{"enabled": false}, map[string]any{"enabled": true, "window": int64(512), "windowOverlap": int64(128)}}}) // 8
	cases := []struct {
		name  string
		edits []mutation
	}{
		{"grid exactly at maxTrials", []mutation{set("spec.space.strategies", []any{fixedGrid, map[string]any{"strategyRef": map[string]any{"name": "x"}}}),
			set("spec.algorithm.maxTrials", int64(9)), set("spec.budget.maxTrials", int64(9))}},
		{"random draw from a larger space", []mutation{set("spec.space.strategies", []any{fixedGrid, fixedGrid}),
			set("spec.algorithm", map[string]any{"type": "Random", "seed": int64(42), "maxTrials": int64(5)})}},
		{"grid above budget.maxTrials, screening topN and the baseline fit", []mutation{set("spec.space.strategies", []any{fixedGrid, map[string]any{"strategyRef": map[string]any{"name": "x"}}}),
			set("spec.algorithm.maxTrials", int64(100)), set("spec.budget.maxTrials", int64(4))}},
		{"random above budget.maxTrials, screening topN and the baseline fit", []mutation{set("spec.algorithm", map[string]any{"type": "Random", "maxTrials": int64(20)})}},
		{"grid without limits of its own", []mutation{del("spec.algorithm.maxTrials"), del("spec.budget"), del("spec.screening"), del("spec.baseline")}},
		{"bm25 only, no options", []mutation{set("spec.space.modes", []any{map[string]any{"mode": "BM25"}})}},
		{"promotion to an Index", []mutation{set("spec.promote", map[string]any{"indexRef": map[string]any{"name": "raadsbesluiten"}})}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, experimentSample)
			ensureNamespace(t, u.GetNamespace())
			u.SetName(objectName("good-" + tc.name))
			for _, e := range tc.edits {
				e(u.Object)
			}
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatalf("rejected: %v", err)
			}
			_ = env.Client.Delete(ctx, u)
		})
	}
}

func TestExperimentCRDColumnsAndNames(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "experiments.ragops.dev"}, &crd); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(crd.Spec.Names.ShortNames, ","); got != "exp" {
		t.Errorf("short names %q, want exp", got)
	}
	if got := strings.Join(crd.Spec.Names.Categories, ","); got != "rag" {
		t.Errorf("categories %q, want rag", got)
	}
	var shown []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Priority == 0 {
			shown = append(shown, strings.ToUpper(c.Name))
		}
	}
	if got := strings.Join(shown, ","); got != "TRIALS,BEST,METRIC,SPENT,READY,AGE" {
		t.Errorf("columns %s", got)
	}
	if crd.Spec.Versions[0].Subresources == nil || crd.Spec.Versions[0].Subresources.Status == nil {
		t.Error("no status subresource")
	}
}
