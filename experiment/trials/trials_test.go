package trials_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/internal/testenv"
)

func late(w, o int32) ragopsv1alpha1.LateChunkingOptions {
	return ragopsv1alpha1.LateChunkingOptions{Enabled: true, Window: w, WindowOverlap: o}
}

var naive = ragopsv1alpha1.LateChunkingOptions{Enabled: false, Window: 512, WindowOverlap: 128}

func tmpl(t ragopsv1alpha1.StrategyTemplate) ragopsv1alpha1.StrategyCandidate {
	return ragopsv1alpha1.StrategyCandidate{Template: &t}
}

func ref(name string) ragopsv1alpha1.StrategyCandidate {
	return ragopsv1alpha1.StrategyCandidate{StrategyRef: &ragopsv1alpha1.LocalObjectReference{Name: name}}
}

func model(name string) ragopsv1alpha1.ModelSpec {
	return ragopsv1alpha1.ModelSpec{Name: name, ImagePath: "/models/" + name}
}

func names(cs []trials.Combination) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestStrategiesExpandTemplates(t *testing.T) {
	cases := []struct {
		name    string
		space   ragopsv1alpha1.SearchSpace
		want    []string
		skipped []string
	}{
		{"refs only", ragopsv1alpha1.SearchSpace{Strategies: []ragopsv1alpha1.StrategyCandidate{ref("a"), ref("b")}},
			[]string{"a", "b"}, nil},
		{"sizes x overlaps, invalid overlap left out", ragopsv1alpha1.SearchSpace{Strategies: []ragopsv1alpha1.StrategyCandidate{
			tmpl(ragopsv1alpha1.StrategyTemplate{Name: "fixed", Types: []ragopsv1alpha1.StrategyType{"Fixed"}, Sizes: []int32{256, 512}, Overlaps: []int32{0, 64, 300}})}},
			[]string{"fixed-256", "fixed-256-o64", "fixed-512", "fixed-512-o64", "fixed-512-o300"},
			[]string{"fixed-256-o300: overlap 300 is not less than size 256"}},
		{"type in the name unless it is the template's; late windows", ragopsv1alpha1.SearchSpace{Strategies: []ragopsv1alpha1.StrategyCandidate{
			tmpl(ragopsv1alpha1.StrategyTemplate{Name: "heading", Types: []ragopsv1alpha1.StrategyType{"Heading", "Recursive"}, Sizes: []int32{512},
				Late: []ragopsv1alpha1.LateChunkingOptions{naive, late(512, 128), late(2048, 256)}, Heading: &ragopsv1alpha1.HeadingOptions{}})}},
			[]string{"heading-512", "heading-512-late512", "heading-512-late2048o256", "heading-recursive-512", "heading-recursive-512-late512", "heading-recursive-512-late2048o256"}, nil},
		{"overlap ignored by sliding windows; stride above size left out", ragopsv1alpha1.SearchSpace{Strategies: []ragopsv1alpha1.StrategyCandidate{
			tmpl(ragopsv1alpha1.StrategyTemplate{Name: "sliding", Types: []ragopsv1alpha1.StrategyType{"SlidingWindow"}, Sizes: []int32{128, 1024}, Overlaps: []int32{0, 64},
				SlidingWindow: &ragopsv1alpha1.SlidingWindowOptions{Stride: 256}})}},
			[]string{"sliding-1024", "sliding-1024"},
			[]string{"sliding-128: slidingWindow.stride 256 exceeds size 128", "sliding-128: slidingWindow.stride 256 exceeds size 128"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			combos, skipped := trials.Strategies(&tc.space)
			if got := names(combos); !slices.Equal(got, tc.want) {
				t.Errorf("combinations %q, want %q", got, tc.want)
			}
			var sk []string
			for _, s := range skipped {
				sk = append(sk, s.Name+": "+s.Reason)
			}
			if !slices.Equal(sk, tc.skipped) {
				t.Errorf("skipped %q, want %q", sk, tc.skipped)
			}
		})
	}
}

func TestTemplateSpecsCarryOnlyTheirTypesOptions(t *testing.T) {
	space := ragopsv1alpha1.SearchSpace{Strategies: []ragopsv1alpha1.StrategyCandidate{tmpl(ragopsv1alpha1.StrategyTemplate{
		Name: "t", Types: []ragopsv1alpha1.StrategyType{"Fixed", "Sentence", "Heading", "Semantic"}, Unit: "Characters", Sizes: []int32{800}, Overlaps: []int32{100},
		Sentence: &ragopsv1alpha1.SentenceOptions{Languages: []string{"nl"}}, Heading: &ragopsv1alpha1.HeadingOptions{PathPrefix: true},
		Recursive: &ragopsv1alpha1.RecursiveOptions{Separators: []string{"\n"}}, Semantic: &ragopsv1alpha1.SemanticOptions{ThresholdAmount: "90"},
	})}}
	combos, _ := trials.Strategies(&space)
	if len(combos) != 4 {
		t.Fatalf("%d combinations", len(combos))
	}
	fixed, sentence, heading, semantic := combos[0].Spec, combos[1].Spec, combos[2].Spec, combos[3].Spec
	if fixed.Sentence != nil || fixed.Heading != nil || fixed.Recursive != nil || fixed.Semantic != nil || fixed.Overlap != 100 || fixed.Unit != "Characters" {
		t.Errorf("fixed: %+v", fixed)
	}
	if sentence.Sentence == nil || sentence.Heading != nil || sentence.Overlap != 100 {
		t.Errorf("sentence: %+v", sentence)
	}
	if heading.Heading == nil || !heading.Heading.PathPrefix || heading.Recursive == nil || heading.Sentence != nil {
		t.Errorf("heading: %+v", heading)
	}
	if semantic.Semantic == nil || semantic.Sentence == nil || semantic.Overlap != 0 || semantic.Heading != nil {
		t.Errorf("semantic: %+v (overlap must be 0: the type takes none)", semantic)
	}
	if combos[3].Name != "t-semantic-800" {
		t.Errorf("semantic name %q", combos[3].Name)
	}
	// Each spec is a copy: editing one leaves the others alone.
	sentence.Sentence.Languages[0] = "de"
	if semantic.Sentence.Languages[0] != "nl" {
		t.Error("template option blocks are shared between combinations")
	}
}

func TestRetrievalVariants(t *testing.T) {
	space := ragopsv1alpha1.SearchSpace{Modes: []ragopsv1alpha1.RetrievalCandidate{
		{Mode: "Dense"}, {Mode: "BM25"}, {Mode: "Hybrid", Alphas: []float64{0.25, 0.5}, Fusions: []ragopsv1alpha1.FusionType{"RankedFusion", "RelativeScoreFusion"}},
		{Mode: "Hybrid"}, {Mode: "Dense"},
	}}
	var got []string
	for _, r := range trials.Retrievals(&space) {
		got = append(got, r.Name)
		if (r.Hybrid != nil) != (r.Mode == ragopsv1alpha1.ModeHybrid) {
			t.Errorf("%s: hybrid options %v with mode %s", r.Name, r.Hybrid, r.Mode)
		}
	}
	want := []string{"dense", "bm25", "hybrid-a0.25-rrf", "hybrid-a0.25-rsf", "hybrid-a0.5-rrf", "hybrid-a0.5-rsf"}
	if !slices.Equal(got, want) {
		t.Errorf("variants %q, want %q (a repeated variant once)", got, want)
	}
	if d := trials.Retrievals(&ragopsv1alpha1.SearchSpace{}); len(d) != 1 || d[0].Name != "dense" {
		t.Errorf("no modes: %+v, want dense alone", d)
	}
}

// experiment is a small valid Experiment: fixed 256/512 x overlap 0/64 plus two references,
// two models, dense and hybrid.
func experiment() *ragopsv1alpha1.Experiment {
	return &ragopsv1alpha1.Experiment{
		ObjectMeta: metav1.ObjectMeta{Name: "sweep", Namespace: "team"},
		Spec: ragopsv1alpha1.ExperimentSpec{
			CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "scifact"},
			Dataset:   ragopsv1alpha1.DatasetSource{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "beir"}, Split: "test"},
			Objective: ragopsv1alpha1.ExperimentObjective{Metric: ragopsv1alpha1.ObjectiveNDCG, K: 10},
			Space: ragopsv1alpha1.SearchSpace{
				Strategies: []ragopsv1alpha1.StrategyCandidate{
					tmpl(ragopsv1alpha1.StrategyTemplate{Name: "fixed", Types: []ragopsv1alpha1.StrategyType{"Fixed"}, Unit: "Tokens", Sizes: []int32{256, 512}, Overlaps: []int32{0, 64}, Late: []ragopsv1alpha1.LateChunkingOptions{naive}}),
					ref("sentence-256"), ref("same-as-fixed-256"),
				},
				Models: []ragopsv1alpha1.ModelSpec{model("all-minilm-l6-v2"), model("bge-small-en-v1.5")},
				Modes:  []ragopsv1alpha1.RetrievalCandidate{{Mode: "Dense"}, {Mode: "Hybrid", Alphas: []float64{0.5}}},
			},
			Algorithm:     ragopsv1alpha1.ExperimentAlgorithm{Type: "Grid", Seed: 1, MaxTrials: ptr.To[int32](20)},
			IndexTemplate: ragopsv1alpha1.TrialIndexTemplate{Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://weaviate:8080"}, VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "flat", Distance: "cosine", EfConstruction: 128, MaxConnections: 32}},
		},
	}
}

func referenced() map[string]ragopsv1alpha1.ChunkingStrategySpec {
	return map[string]ragopsv1alpha1.ChunkingStrategySpec{
		"sentence-256": {Type: "Sentence", Unit: "Tokens", Size: 256},
		// The same strategy as the template's fixed-256: one build serves both.
		"same-as-fixed-256": {Type: "Fixed", Unit: "Tokens", Size: 256},
	}
}

func expand(t *testing.T, e *ragopsv1alpha1.Experiment) *trials.Plan {
	t.Helper()
	p, err := trials.Expand(trials.Input{Experiment: e, Referenced: referenced(), Format: ragopsv1alpha1.FormatBEIR, Revision: controllers.Revision})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExpandGridBuildsEachRevisionOnce(t *testing.T) {
	p := expand(t, experiment())
	if p.GridSize != 12 || p.Distinct != 10 || len(p.Trials) != 10 {
		t.Fatalf("grid %d, distinct %d, trials %d; want 12 combinations, 10 distinct revisions (the reference equal to fixed-256 merged), 10 trials",
			p.GridSize, p.Distinct, len(p.Trials))
	}
	var got []string
	revs := map[string]bool{}
	indexes := map[string]bool{}
	for _, tr := range p.Trials {
		got = append(got, tr.Name)
		if revs[tr.Revision] {
			t.Errorf("revision %s built twice", tr.Revision)
		}
		revs[tr.Revision] = true
		indexes[tr.Index.Name] = true
		if len(tr.Name) > trials.MaxNameLength {
			t.Errorf("%s: %d characters", tr.Name, len(tr.Name))
		}
		if tr.Labels[ragopsv1alpha1.LabelExperiment] != "sweep" || tr.Labels[ragopsv1alpha1.LabelTrial] != tr.Name || tr.Index.Labels[ragopsv1alpha1.LabelTrial] != tr.Name {
			t.Errorf("%s labels %v / %v", tr.Name, tr.Labels, tr.Index.Labels)
		}
		if want := controllers.Revision(*tr.Strategy.Spec, tr.Index, ragopsv1alpha1.FormatBEIR); tr.Revision != want {
			t.Errorf("%s revision %s, want %s", tr.Name, tr.Revision, want)
		}
		// Retrieval modes are Evaluations of the same build, pinned to its revision.
		if len(tr.Evaluations) != 2 {
			t.Fatalf("%s: %d evaluations", tr.Name, len(tr.Evaluations))
		}
		for i, ev := range tr.Evaluations {
			if ev.Spec.IndexRef.Name != tr.Index.Name || ev.Spec.Revision != tr.Revision || ev.Labels[ragopsv1alpha1.LabelTrial] != tr.Name ||
				ev.Labels[ragopsv1alpha1.LabelRetrieval] != p.Retrievals[i].Name || *ev.Spec.RerunOnRevisionChange ||
				ev.Name != tr.Name+"-"+strings.ReplaceAll(p.Retrievals[i].Name, ".", "-") {
				t.Errorf("%s: evaluation %s = %+v labels %v", tr.Name, ev.Name, ev.Spec, ev.Labels)
			}
			if !slices.Contains(ev.Spec.K, 10) {
				t.Errorf("%s: k %v lacks the objective's 10", ev.Name, ev.Spec.K)
			}
		}
		if tr.Evaluations[1].Spec.Mode != "Hybrid" || *tr.Evaluations[1].Spec.Hybrid.Alpha != 0.5 || tr.Evaluations[1].Spec.Hybrid.Fusion != "RelativeScoreFusion" {
			t.Errorf("hybrid evaluation %+v", tr.Evaluations[1].Spec)
		}
	}
	if len(indexes) != len(p.Trials) {
		t.Errorf("%d Indexes for %d trials", len(indexes), len(p.Trials))
	}
	want := []string{
		"sweep-fixed-256-all-minilm-l6-v2", "sweep-fixed-256-bge-small-en-v1-5",
		"sweep-fixed-256-o64-all-minilm-l6-v2", "sweep-fixed-256-o64-bge-small-en-v1-5",
		"sweep-fixed-512-all-minilm-l6-v2", "sweep-fixed-512-bge-small-en-v1-5",
		"sweep-fixed-512-o64-all-minilm-l6-v2", "sweep-fixed-512-o64-bge-small-en-v1-5",
		"sweep-sentence-256-all-minilm-l6-v2", "sweep-sentence-256-bge-small-en-v1-5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("trials %q\nwant %q", got, want)
	}
	first := p.Trials[0]
	if !slices.Equal(first.Merged, []string{"same-as-fixed-256"}) {
		t.Errorf("merged %v, want the identical reference", first.Merged)
	}
	if first.ChunkingStrategy == nil || first.ChunkingStrategy.Name != "sweep-fixed-256" || first.Index.Spec.StrategyRef.Name != "sweep-fixed-256" {
		t.Errorf("generated strategy %+v, index strategyRef %q", first.ChunkingStrategy, first.Index.Spec.StrategyRef.Name)
	}
	sentence := p.Trials[8]
	if sentence.ChunkingStrategy != nil || sentence.Index.Spec.StrategyRef.Name != "sentence-256" || sentence.Parameters["strategyRef"] != "sentence-256" {
		t.Errorf("referenced trial: strategy %v, strategyRef %q, parameters %v", sentence.ChunkingStrategy, sentence.Index.Spec.StrategyRef.Name, sentence.Parameters)
	}
	if got := p.Trials[2].Parameters; got["type"] != "Fixed" || got["size"] != "256" || got["overlap"] != "64" || got["late"] != "false" || got["model"] != "all-minilm-l6-v2" {
		t.Errorf("parameters %v", got)
	}
	if s := first.Index.Spec; s.CorpusRef.Name != "scifact" || s.VectorIndex.Type != "flat" || s.Weaviate.URL != "http://weaviate:8080" || s.Rollout.RevisionHistoryLimit != 1 {
		t.Errorf("index spec %+v", s)
	}
}

// With spec.screening every chosen trial gets a screening trial first: the same strategy,
// model and Evaluations on an Index sampled with the screening fraction and seed, judged by
// the Experiment's dataset, a revision of its own, named <trial>-screen, and the two link.
// TestTrialIndexesRunNoModelServer (issue 55 item 15): trial Indexes (screening ones too)
// have serving off, so they neither start model servers nor join the production Index's.
func TestTrialIndexesRunNoModelServer(t *testing.T) {
	exp := experiment()
	exp.Spec.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.1, Seed: 3, TopN: 2}
	p := expand(t, exp)
	if len(p.Trials) == 0 {
		t.Fatal("no trials")
	}
	for _, tr := range p.Trials {
		if tr.Index.Spec.Serving.ServingEnabled() {
			t.Errorf("trial Index %s has serving on", tr.Index.Name)
		}
	}
}

func TestExpandScreeningPrecedesEachTrialWithItsSample(t *testing.T) {
	e := experiment()
	e.Spec.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.1, Seed: 3, TopN: 2}
	p := expand(t, e)
	if len(p.Trials) != 20 {
		t.Fatalf("%d trials, want 10 screening + 10 full", len(p.Trials))
	}
	full := expand(t, experiment()).Trials
	revs := map[string]bool{}
	for i, s := range p.Trials[:10] {
		f := p.Trials[10+i]
		if f.Name != full[i].Name || f.Revision != full[i].Revision || f.Screens != "" {
			t.Errorf("full trial %d: %s rev %s screens %q; want %s rev %s as without screening", i, f.Name, f.Revision, f.Screens, full[i].Name, full[i].Revision)
		}
		if s.Screens != f.Name || f.ScreenedBy != s.Name || s.Name != f.Name+"-screen" && len(f.Name) < trials.MaxNameLength-7 {
			t.Errorf("screening trial %s screens %q; full %s screened by %q", s.Name, s.Screens, f.Name, f.ScreenedBy)
		}
		sm := s.Index.Spec.Sample
		if sm == nil || sm.Fraction != 0.1 || sm.Seed != 3 || sm.Judged == nil || sm.Judged.PVC == nil || sm.Judged.PVC.ClaimName != "beir" || sm.Judged.Split != "test" {
			t.Errorf("%s sample %+v", s.Name, sm)
		}
		if f.Index.Spec.Sample != nil {
			t.Errorf("full trial %s is sampled: %+v", f.Name, f.Index.Spec.Sample)
		}
		if want := controllers.Revision(*s.Strategy.Spec, s.Index, ragopsv1alpha1.FormatBEIR); s.Revision != want || s.Revision == f.Revision {
			t.Errorf("%s revision %s, want %s (and not the full trial's %s)", s.Name, s.Revision, want, f.Revision)
		}
		if revs[s.Revision] {
			t.Errorf("screening revision %s twice", s.Revision)
		}
		revs[s.Revision] = true
		if s.Index.Name != s.Name || s.Index.Labels[ragopsv1alpha1.LabelTrial] != s.Name || s.Index.Spec.StrategyRef != f.Index.Spec.StrategyRef {
			t.Errorf("%s index %s labels %v strategy %v", s.Name, s.Index.Name, s.Index.Labels, s.Index.Spec.StrategyRef)
		}
		if len(s.Evaluations) != len(f.Evaluations) || s.Evaluations[0].Spec.IndexRef.Name != s.Name || s.Evaluations[0].Spec.Revision != s.Revision {
			t.Errorf("%s evaluations %+v", s.Name, s.Evaluations[0].Spec)
		}
	}
}

func TestExpandIsDeterministicAndRandomIsSeeded(t *testing.T) {
	grid := expand(t, experiment())
	again := expand(t, experiment())
	for i := range grid.Trials {
		if grid.Trials[i].Name != again.Trials[i].Name || grid.Trials[i].Revision != again.Trials[i].Revision {
			t.Fatalf("two expansions differ at %d", i)
		}
	}
	draw := func(seed int64, n int32, edit func(*ragopsv1alpha1.Experiment)) []string {
		e := experiment()
		e.Spec.Algorithm = ragopsv1alpha1.ExperimentAlgorithm{Type: "Random", Seed: seed, MaxTrials: &n}
		if edit != nil {
			edit(e)
		}
		var out []string
		for _, tr := range expand(t, e).Trials {
			out = append(out, tr.Revision)
		}
		return out
	}
	a, b := draw(1, 4, nil), draw(1, 4, nil)
	if len(a) != 4 || !slices.Equal(a, b) {
		t.Fatalf("seed 1 drew %v then %v", a, b)
	}
	if c := draw(2, 4, nil); slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 drew the same trials %v", a)
	}
	if all := draw(1, 100, nil); len(all) != 10 {
		t.Errorf("maxTrials above the space drew %d, want all 10", len(all))
	}
	// A longer draw with the same seed starts with the shorter one: the draw is an order.
	if long := draw(1, 7, nil); !slices.Equal(long[:4], a) {
		t.Errorf("draw of 7 %v does not start with the draw of 4 %v", long, a)
	}
	// Removing a model keeps the drawn trials of the other model among the draw.
	keep := draw(1, 10, func(e *ragopsv1alpha1.Experiment) { e.Spec.Space.Models = e.Spec.Space.Models[:1] })
	full := draw(1, 10, nil)
	var sub []string
	for _, r := range full {
		if slices.Contains(keep, r) {
			sub = append(sub, r)
		}
	}
	if !slices.Equal(sub, keep) {
		t.Errorf("one model's draw %v is not the full draw %v restricted to it", keep, full)
	}
}

func TestExpandRefusesMissingReferences(t *testing.T) {
	e := experiment()
	e.Spec.Space.Strategies = append(e.Spec.Space.Strategies, ref("gone"))
	_, err := trials.Expand(trials.Input{Experiment: e, Referenced: referenced(), Revision: controllers.Revision})
	if err == nil || !strings.Contains(err.Error(), "spec.space.strategies[3].strategyRef") || !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("err = %v", err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name string
		edit func(*ragopsv1alpha1.ExperimentSpec)
		want []string // empty: valid
	}{
		{"valid", func(*ragopsv1alpha1.ExperimentSpec) {}, nil},
		{"grid above maxTrials", func(s *ragopsv1alpha1.ExperimentSpec) { s.Algorithm.MaxTrials = ptr.To[int32](11) },
			[]string{"spec.algorithm.maxTrials", "the Grid space lists 12 trials"}},
		{"grid above 1000 when unset", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Algorithm.MaxTrials = nil
			s.Space.Strategies[0].Template.Sizes = make([]int32, 16)
			s.Space.Strategies[0].Template.Overlaps = make([]int32, 16)
			s.Space.Strategies[0].Template.Types = []ragopsv1alpha1.StrategyType{"Fixed", "Recursive"}
		}, []string{"spec.algorithm.maxTrials", "lists 1028 trials", "1000 when unset"}},
		{"grid above budget.maxTrials", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTrials: ptr.To[int32](5)}
		}, []string{"spec.budget.maxTrials", "more than budget.maxTrials 5"}},
		{"grid above budget.maxTrials, a screening round's topN fits", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTrials: ptr.To[int32](3)}
			s.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.1, TopN: 3}
		}, nil},
		{"grid above budget.maxTrials, a screening round's topN does not fit", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTrials: ptr.To[int32](3)}
			s.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.1, TopN: 4}
		}, []string{"spec.budget.maxTrials", "more than budget.maxTrials 3", "only screening.topN and the baseline must fit"}},
		{"random without maxTrials", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Algorithm = ragopsv1alpha1.ExperimentAlgorithm{Type: "Random"}
		},
			[]string{"spec.algorithm.maxTrials", "required"}},
		{"empty space", func(s *ragopsv1alpha1.ExperimentSpec) { s.Space.Strategies = nil }, []string{"spec.space.strategies", "at least one strategy"}},
		{"no valid combination", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Space.Strategies = s.Space.Strategies[:1]
			s.Space.Strategies[0].Template.Overlaps = []int32{600}
		}, []string{"spec.space.strategies", "no combination of the templates is a valid strategy", "fixed-256-o600: overlap 600 is not less than size 256"}},
		{"a reference named like a generated strategy", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Space.Strategies = append(s.Space.Strategies, ref("fixed-512-o64"))
		}, []string{"spec.space.strategies[3]", "Duplicate value", "fixed-512-o64"}},
		{"baseline strategy unknown", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Baseline = &ragopsv1alpha1.ExperimentBaseline{Strategy: "fixed-1024"}
		}, []string{"spec.baseline.strategy", "fixed-1024", "fixed-256"}},
		{"baseline retrieval unknown", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Baseline = &ragopsv1alpha1.ExperimentBaseline{Strategy: "fixed-512", Retrieval: "bm25"}
		}, []string{"spec.baseline.retrieval", `"bm25"`, "dense", "hybrid-a0.5-rsf"}},
		{"baseline valid", func(s *ragopsv1alpha1.ExperimentSpec) {
			s.Baseline = &ragopsv1alpha1.ExperimentBaseline{Strategy: "sentence-256", Model: "bge-small-en-v1.5", Retrieval: "hybrid-a0.5-rsf"}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := experiment()
			tc.edit(&e.Spec)
			err := trials.Validate(&e.Spec)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}

func TestAdmitTheArchiveSample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "config", "samples", "demo-experiment", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp, err := trials.Admit(ctx, raw)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	combos, skipped := trials.Strategies(&exp.Spec.Space)
	if len(combos) != 9 || len(skipped) != 0 || trials.GridSize(&exp.Spec) != 9 {
		t.Errorf("%d strategies (%v), %d skipped, grid %d; want the archive's 9", len(combos), names(combos), len(skipped), trials.GridSize(&exp.Spec))
	}
	if got := len(trials.Retrievals(&exp.Spec.Space)); got != 3 {
		t.Errorf("%d retrieval variants, want dense + 2 hybrid fusions", got)
	}
	bad := strings.Replace(string(raw), "baseline: {strategy: fixed-512,", "baseline: {strategy: fixed-1024,", 1)
	if _, err := trials.Admit(ctx, []byte(bad)); err == nil || !strings.Contains(err.Error(), "spec.baseline.strategy") || !strings.Contains(err.Error(), ragopsv1alpha1.ReasonInvalidSpace) {
		t.Errorf("a baseline outside the space: %v", err)
	}
	cel := strings.Replace(string(raw), "maxTrials: 9}\n  indexTemplate", "maxTrials: 8}\n  indexTemplate", 1)
	if _, err := trials.Admit(ctx, []byte(cel)); err == nil || !strings.Contains(err.Error(), "spec.algorithm.maxTrials") || !strings.Contains(err.Error(), "lists 9 trials") {
		t.Errorf("a grid above maxTrials: %v", err)
	}
}

// TestRevisionsMatchTheStoredObjects creates a plan's generated ChunkingStrategies and Indexes
// in a real kube-apiserver and recomputes each revision from the stored (defaulted) objects, as
// the Index controller does: the hash the plan merged trials by is the hash the builds get.
func TestRevisionsMatchTheStoredObjects(t *testing.T) {
	env, err := testenv.Start()
	if errors.Is(err, testenv.ErrNoAssets) && os.Getenv("RAGOPS_REQUIRE_ALL") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	e := experiment()
	e.Spec.Space.Strategies = append(e.Spec.Space.Strategies, tmpl(ragopsv1alpha1.StrategyTemplate{
		Name: "heading", Types: []ragopsv1alpha1.StrategyType{"Heading", "Sentence"}, Unit: "Tokens", Sizes: []int32{300}, Overlaps: []int32{0},
		Late:    []ragopsv1alpha1.LateChunkingOptions{naive, late(1024, 256)},
		Heading: &ragopsv1alpha1.HeadingOptions{Markdown: ptr.To(true)}, Sentence: &ragopsv1alpha1.SentenceOptions{Languages: []string{"en", "nl"}},
	}))
	e.Spec.Algorithm.MaxTrials = nil
	p := expand(t, e)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace}}); err != nil {
		t.Fatal(err)
	}
	for name, spec := range referenced() {
		cs := &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.Namespace}, Spec: spec}
		if err := env.Client.Create(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, tr := range p.Trials {
		if cs := tr.ChunkingStrategy; cs != nil {
			if err := env.Client.Create(ctx, cs.DeepCopy()); err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("%s: %v", cs.Name, err)
			}
		}
		if err := env.Client.Create(ctx, tr.Index.DeepCopy()); err != nil {
			t.Fatalf("%s: %v", tr.Name, err)
		}
		for _, ev := range tr.Evaluations {
			if err := env.Client.Create(ctx, ev.DeepCopy()); err != nil {
				t.Fatalf("%s: %v", ev.Name, err)
			}
		}
		var idx ragopsv1alpha1.Index
		var cs ragopsv1alpha1.ChunkingStrategy
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: tr.Index.Name}, &idx); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: idx.Spec.StrategyRef.Name}, &cs); err != nil {
			t.Fatal(err)
		}
		if got := controllers.Revision(cs.Spec, &idx, ragopsv1alpha1.FormatBEIR); got != tr.Revision {
			t.Errorf("%s: stored objects give revision %s, the plan %s (strategy %+v)", tr.Name, got, tr.Revision, cs.Spec)
		}
		checked++
	}
	if checked != 18 {
		t.Errorf("checked %d trials, want 18 (10 + heading/sentence x naive/late x 2 models)", checked)
	}
}
