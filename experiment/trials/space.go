// Package trials expands an Experiment's search space into trials: the ChunkingStrategy,
// Index and Evaluations each trial is made of, with stable names and labels.
//
// A trial is one (strategy, model) pair, built once as one Index; every retrieval variant
// (dense, bm25, hybrid with each alpha and fusion) is an Evaluation of that build, never a
// rebuild. Combinations whose Index revision (the hash of everything that changes the vectors,
// computed by the caller's RevisionFunc, in the operator controllers.Revision) is the same are
// one trial. Grid takes every trial in the space's order; Random takes the maxTrials trials
// whose SHA-256 of (seed, revision) is smallest: a uniformly random subset under the usual
// random-oracle view of the hash, reproducible from the seed, and stable when the space
// changes (a trial drawn before is still drawn when other combinations join or leave, as long
// as it is still among the smallest).
//
// The package does no I/O: the caller reads the referenced ChunkingStrategies and the
// Corpus's format and creates the objects.
package trials

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// DefaultGridLimit is the largest Grid space accepted when algorithm.maxTrials is unset (the
// CRD's CEL rule uses the same number).
const DefaultGridLimit = 1000

// Default window overlap of late chunking (the CRD default); generated strategy names carry
// the window overlap only when it differs.
const defaultLateWindowOverlap = 128

// GridSize is the number of trials a Grid over spec's space lists, as the CRD's CEL rule counts
// it: per strategy candidate 1 for a strategyRef, |types| x |sizes| x |overlaps| x |late| for a
// template (an unset list counts 1), summed, times |models|. Combinations left out later
// (overlap not below size) or merged (same revision) are counted.
func GridSize(spec *ragopsv1alpha1.ExperimentSpec) int {
	n := 0
	for _, c := range spec.Space.Strategies {
		if t := c.Template; t != nil {
			n += len(t.Types) * len(t.Sizes) * max(len(t.Overlaps), 1) * max(len(t.Late), 1)
		} else {
			n++
		}
	}
	return n * len(spec.Space.Models)
}

// Combination is one strategy of the space: a referenced ChunkingStrategy or one combination of
// a template's parameters.
type Combination struct {
	// Name is the strategy's name in the Experiment: the strategyRef's name, or for a template
	// <template>[-<type>]-<size>[-o<overlap>][-late<window>[o<windowOverlap>]] (the type only
	// when it differs from the template's name, lower case: fixed, sliding, sentence,
	// paragraph, recursive, heading, semantic, cluster; the window overlap only when not 128).
	Name string
	// Ref is the referenced ChunkingStrategy's name; empty for a template combination.
	Ref string
	// Spec is the strategy: the generated spec of a template combination, or the referenced
	// strategy's spec once resolved (nil before).
	Spec *ragopsv1alpha1.ChunkingStrategySpec
	// Field is the space entry it comes from, e.g. spec.space.strategies[2].
	Field string
}

// Skipped is a template combination left out because no ChunkingStrategy could hold it.
type Skipped struct {
	// Name the combination would have had, and Field its template.
	Name, Field string
	// Reason, e.g. "overlap 512 is not less than size 512".
	Reason string
}

// typeNames are the short lower-case type names used in generated strategy names.
var typeNames = map[ragopsv1alpha1.StrategyType]string{
	ragopsv1alpha1.StrategyFixed: "fixed", ragopsv1alpha1.StrategySlidingWindow: "sliding",
	ragopsv1alpha1.StrategySentence: "sentence", ragopsv1alpha1.StrategyParagraph: "paragraph",
	ragopsv1alpha1.StrategyRecursive: "recursive", ragopsv1alpha1.StrategyHeading: "heading",
	ragopsv1alpha1.StrategySemantic: "semantic", ragopsv1alpha1.StrategyCluster: "cluster",
}

// takesOverlap reports whether a strategy type uses spec.overlap (chunkers/registry passes it
// to Fixed, Sentence, Paragraph, Recursive and Heading only).
func takesOverlap(t ragopsv1alpha1.StrategyType) bool {
	switch t {
	case ragopsv1alpha1.StrategySlidingWindow, ragopsv1alpha1.StrategySemantic, ragopsv1alpha1.StrategyCluster:
		return false
	}
	return true
}

// Strategies lists the space's strategies in order: a strategyRef as one Combination (Spec
// nil), a template as one per valid combination of types x sizes x overlaps x late, nested in
// that order. A type that takes no overlap gets overlap 0, so combinations differing only there
// come out twice with the same Name and spec (Expand merges them). Combinations that no
// ChunkingStrategy could hold are returned in skipped.
func Strategies(space *ragopsv1alpha1.SearchSpace) (combos []Combination, skipped []Skipped) {
	for i, c := range space.Strategies {
		path := fmt.Sprintf("spec.space.strategies[%d]", i)
		if c.StrategyRef != nil {
			combos = append(combos, Combination{Name: c.StrategyRef.Name, Ref: c.StrategyRef.Name, Field: path})
			continue
		}
		if c.Template == nil {
			continue
		}
		t := c.Template
		overlaps := t.Overlaps
		if len(overlaps) == 0 {
			overlaps = []int32{0}
		}
		lates := t.Late
		if len(lates) == 0 {
			lates = []ragopsv1alpha1.LateChunkingOptions{{}}
		}
		for _, typ := range t.Types {
			for _, size := range t.Sizes {
				for _, overlap := range overlaps {
					if !takesOverlap(typ) {
						overlap = 0
					}
					for _, late := range lates {
						spec := templateSpec(t, typ, size, overlap, late)
						name := templateName(t.Name, spec)
						if reason := invalid(spec); reason != "" {
							skipped = append(skipped, Skipped{Name: name, Field: path + ".template", Reason: reason})
							continue
						}
						combos = append(combos, Combination{Name: name, Spec: spec, Field: path + ".template"})
					}
				}
			}
		}
	}
	return combos, skipped
}

// templateSpec is the ChunkingStrategySpec of one template combination, with the option blocks
// its type uses (see ragopsv1alpha1.StrategyTemplate).
func templateSpec(t *ragopsv1alpha1.StrategyTemplate, typ ragopsv1alpha1.StrategyType, size, overlap int32, late ragopsv1alpha1.LateChunkingOptions) *ragopsv1alpha1.ChunkingStrategySpec {
	unit := t.Unit
	if unit == "" {
		unit = ragopsv1alpha1.UnitTokens
	}
	s := &ragopsv1alpha1.ChunkingStrategySpec{Type: typ, Unit: unit, Size: size, Overlap: overlap}
	switch typ {
	case ragopsv1alpha1.StrategySlidingWindow:
		s.SlidingWindow = t.SlidingWindow.DeepCopy()
	case ragopsv1alpha1.StrategyHeading:
		s.Heading = t.Heading.DeepCopy()
		s.Recursive = t.Recursive.DeepCopy()
	case ragopsv1alpha1.StrategyRecursive:
		s.Recursive = t.Recursive.DeepCopy()
	case ragopsv1alpha1.StrategySemantic:
		s.Semantic = t.Semantic.DeepCopy()
		s.Sentence = t.Sentence.DeepCopy()
	case ragopsv1alpha1.StrategyCluster:
		s.Cluster = t.Cluster.DeepCopy()
		s.Sentence = t.Sentence.DeepCopy()
	case ragopsv1alpha1.StrategySentence:
		s.Sentence = t.Sentence.DeepCopy()
	}
	if late.Enabled {
		s.Late = late.DeepCopy()
	}
	return s
}

// templateName names a template combination (see Combination.Name).
func templateName(template string, s *ragopsv1alpha1.ChunkingStrategySpec) string {
	name := template
	if tn := typeNames[s.Type]; tn != template {
		name += "-" + tn
	}
	name += "-" + strconv.Itoa(int(s.Size))
	if s.Overlap > 0 {
		name += "-o" + strconv.Itoa(int(s.Overlap))
	}
	if s.Late != nil {
		name += "-late" + strconv.Itoa(int(s.Late.Window))
		if s.Late.WindowOverlap != defaultLateWindowOverlap {
			name += "o" + strconv.Itoa(int(s.Late.WindowOverlap))
		}
	}
	return name
}

// invalid returns why no ChunkingStrategy could hold s (the CRD's cross-field rules on
// ChunkingStrategySpec), or "".
func invalid(s *ragopsv1alpha1.ChunkingStrategySpec) string {
	if s.Overlap >= s.Size {
		return fmt.Sprintf("overlap %d is not less than size %d", s.Overlap, s.Size)
	}
	if s.SlidingWindow != nil && s.SlidingWindow.Stride > s.Size {
		return fmt.Sprintf("slidingWindow.stride %d exceeds size %d", s.SlidingWindow.Stride, s.Size)
	}
	return ""
}

// Retrieval is one retrieval variant every trial's build is evaluated with.
type Retrieval struct {
	// Name is dense, bm25 or hybrid-a<alpha>-<rsf|rrf>, e.g. hybrid-a0.5-rsf.
	Name string
	// Mode and Hybrid are the Evaluation's.
	Mode   ragopsv1alpha1.RetrievalMode
	Hybrid *ragopsv1alpha1.HybridOptions
}

// fusionNames abbreviate fusions in retrieval names.
var fusionNames = map[ragopsv1alpha1.FusionType]string{
	ragopsv1alpha1.FusionRelativeScore: "rsf", ragopsv1alpha1.FusionRanked: "rrf",
}

// Retrievals lists the space's retrieval variants in order: a Dense or BM25 entry is one,
// a Hybrid entry one per alpha x fusion (unset alphas mean [0.5], unset fusions
// [RelativeScoreFusion], the Evaluation's defaults). No modes means Dense alone. A variant
// listed twice is returned once.
func Retrievals(space *ragopsv1alpha1.SearchSpace) []Retrieval {
	modes := space.Modes
	if len(modes) == 0 {
		modes = []ragopsv1alpha1.RetrievalCandidate{{Mode: ragopsv1alpha1.ModeDense}}
	}
	var out []Retrieval
	seen := map[string]bool{}
	add := func(r Retrieval) {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	for _, m := range modes {
		if m.Mode != ragopsv1alpha1.ModeHybrid {
			add(Retrieval{Name: strings.ToLower(string(m.Mode)), Mode: m.Mode})
			continue
		}
		alphas, fusions := m.Alphas, m.Fusions
		if len(alphas) == 0 {
			alphas = []float64{0.5}
		}
		if len(fusions) == 0 {
			fusions = []ragopsv1alpha1.FusionType{ragopsv1alpha1.FusionRelativeScore}
		}
		for _, a := range alphas {
			for _, f := range fusions {
				alpha := a
				add(Retrieval{
					Name: "hybrid-a" + strconv.FormatFloat(a, 'f', -1, 64) + "-" + fusionNames[f],
					Mode: ragopsv1alpha1.ModeHybrid, Hybrid: &ragopsv1alpha1.HybridOptions{Alpha: &alpha, Fusion: f},
				})
			}
		}
	}
	return out
}

// Validate checks what the CRD's rules cannot (or may not have, for an object stored under an
// older CRD): the Grid size against algorithm.maxTrials (DefaultGridLimit when unset) and
// budget.maxTrials, Random's maxTrials, unique strategy names, at least one valid combination,
// and a baseline naming a strategy, model and retrieval variant of the space. Errors name the
// field, as the apiserver's do; nil means valid. A controller sets Stalled (reason
// ragopsv1alpha1.ReasonInvalidSpace) with the error; an offline check (Admit) refuses with it.
func Validate(spec *ragopsv1alpha1.ExperimentSpec) error {
	var errs field.ErrorList
	algo := field.NewPath("spec", "algorithm")
	grid := GridSize(spec)
	switch spec.Algorithm.Type {
	case ragopsv1alpha1.AlgorithmGrid, "":
		limit := DefaultGridLimit
		if m := spec.Algorithm.MaxTrials; m != nil {
			limit = int(*m)
		}
		if grid > limit {
			errs = append(errs, field.Invalid(algo.Child("maxTrials"), limit,
				fmt.Sprintf("the Grid space lists %d trials (strategy combinations x models), more than algorithm.maxTrials (%d; %d when unset)", grid, limit, DefaultGridLimit)))
		}
		if b := spec.Budget; b != nil && b.MaxTrials != nil && grid > int(*b.MaxTrials) && !screenedFits(spec) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "budget", "maxTrials"), *b.MaxTrials,
				fmt.Sprintf("the Grid space lists %d trials (strategy combinations x models), more than budget.maxTrials %d (with spec.screening, only screening.topN and the baseline must fit)", grid, *b.MaxTrials)))
		}
	case ragopsv1alpha1.AlgorithmRandom:
		if spec.Algorithm.MaxTrials == nil {
			errs = append(errs, field.Required(algo.Child("maxTrials"), "maxTrials is required when type is Random"))
		} else if b := spec.Budget; b != nil && b.MaxTrials != nil && *spec.Algorithm.MaxTrials > *b.MaxTrials && !screenedFits(spec) {
			errs = append(errs, field.Invalid(algo.Child("maxTrials"), *spec.Algorithm.MaxTrials, "algorithm.maxTrials must not exceed budget.maxTrials (with spec.screening, only screening.topN and the baseline must fit)"))
		}
	default:
		errs = append(errs, field.NotSupported(algo.Child("type"), spec.Algorithm.Type, []string{string(ragopsv1alpha1.AlgorithmGrid), string(ragopsv1alpha1.AlgorithmRandom)}))
	}

	space := field.NewPath("spec", "space")
	if len(spec.Space.Strategies) == 0 {
		errs = append(errs, field.Required(space.Child("strategies"), "the space needs at least one strategy"))
	}
	if len(spec.Space.Models) == 0 {
		errs = append(errs, field.Required(space.Child("models"), "the space needs at least one model"))
	}
	combos, skipped := Strategies(&spec.Space)
	origin := map[string]Combination{}
	for _, c := range combos {
		if prev, ok := origin[c.Name]; ok && prev.Field != c.Field {
			errs = append(errs, field.Duplicate(field.NewPath(c.Field), c.Name))
			continue
		}
		origin[c.Name] = c
	}
	if len(combos) == 0 && len(spec.Space.Strategies) > 0 {
		reasons := make([]string, 0, len(skipped))
		for _, s := range skipped {
			reasons = append(reasons, s.Name+": "+s.Reason)
		}
		errs = append(errs, field.Invalid(space.Child("strategies"), len(skipped),
			"no combination of the templates is a valid strategy ("+strings.Join(reasons, "; ")+")"))
	}
	models := map[string]bool{}
	for i, m := range spec.Space.Models {
		if models[m.Name] {
			errs = append(errs, field.Duplicate(space.Child("models").Index(i).Child("name"), m.Name))
		}
		models[m.Name] = true
	}
	if b := spec.Baseline; b != nil {
		bp := field.NewPath("spec", "baseline")
		if _, ok := origin[b.Strategy]; !ok {
			errs = append(errs, field.Invalid(bp.Child("strategy"), b.Strategy, "baseline.strategy must name a strategy of the space (a strategyRef's name or a generated name such as "+firstName(combos)+")"))
		}
		if b.Model != "" && !models[b.Model] {
			errs = append(errs, field.Invalid(bp.Child("model"), b.Model, "baseline.model must name a model of space.models"))
		}
		if b.Retrieval != "" {
			var names []string
			found := false
			for _, r := range Retrievals(&spec.Space) {
				names = append(names, r.Name)
				found = found || r.Name == b.Retrieval
			}
			if !found {
				errs = append(errs, field.NotSupported(bp.Child("retrieval"), b.Retrieval, names))
			}
		}
	}
	return errs.ToAggregate()
}

func firstName(combos []Combination) string {
	if len(combos) == 0 {
		return "fixed-512"
	}
	return combos[0].Name
}

// screenedFits reports whether a screening round keeps the full builds within
// budget.maxTrials: screening trials do not count against it, and at most screening.topN
// trials and the baseline go on to a full build.
func screenedFits(spec *ragopsv1alpha1.ExperimentSpec) bool {
	s, b := spec.Screening, spec.Budget
	if s == nil || b == nil || b.MaxTrials == nil {
		return false
	}
	full := int(s.TopN)
	if full == 0 {
		full = 3 // the API's default
	}
	if spec.Baseline != nil {
		full++
	}
	return full <= int(*b.MaxTrials)
}
