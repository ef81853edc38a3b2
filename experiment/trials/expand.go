package trials

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// RevisionFunc returns the revision hash of an Index built with strategy from a corpus in
// format; the operator passes controllers.Revision.
type RevisionFunc func(strategy ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, format ragopsv1alpha1.DocumentFormat) string

// Input is what Expand needs besides the Experiment.
type Input struct {
	// Experiment as stored (defaults applied); its name and namespace name the children.
	Experiment *ragopsv1alpha1.Experiment
	// Referenced holds the specs of the ChunkingStrategies the space's strategyRefs name, by
	// name, as stored (defaults applied).
	Referenced map[string]ragopsv1alpha1.ChunkingStrategySpec
	// Format is the Corpus's spec.format (part of the revision).
	Format ragopsv1alpha1.DocumentFormat
	// Revision computes revision hashes.
	Revision RevisionFunc
}

// Trial is one (strategy, model) pair and the objects it is made of.
type Trial struct {
	// Name is <experiment>-<strategy>-<model> as a DNS label of at most 63 characters (other
	// characters become "-"; a hash suffix when longer, or when another trial has the same
	// label); it names the Index and its Evaluations <trial>-<retrieval>.
	Name string
	// Strategy is the first combination of the space with this revision; Merged names the
	// others (same revision hash: the same build serves them).
	Strategy Combination
	Merged   []string
	// Model is the embedding model.
	Model ragopsv1alpha1.ModelSpec
	// Revision is the Index revision hash the build will have.
	Revision string
	// Parameters describe the trial for display: type, unit, size, overlap, stride, late,
	// window, windowOverlap, model, and strategyRef for a referenced strategy.
	Parameters map[string]string
	// Labels are set on every child of the trial.
	Labels map[string]string
	// ChunkingStrategy is the generated strategy of a template combination (shared by the
	// trials of every model); nil for a referenced one.
	ChunkingStrategy *ragopsv1alpha1.ChunkingStrategy
	// Index is the trial's Index.
	Index *ragopsv1alpha1.Index
	// Evaluations are one per retrieval variant, in the space's order, pinned to Revision and
	// not re-run on another; each carries the ragops.dev/retrieval label with the variant's
	// name (a valid label value: at most 20 characters of [a-z0-9.-]).
	Evaluations []*ragopsv1alpha1.Evaluation
	// Screens names the full trial a screening trial screens: its Index is that trial's on
	// spec.screening's sample (every document the dataset judges plus a fraction of the
	// rest), named <trial>-screen. Empty for a full trial.
	Screens string
	// ScreenedBy names a full trial's screening trial; empty without spec.screening.
	ScreenedBy string
}

// Plan is an Experiment's expanded space.
type Plan struct {
	// Trials chosen, in order: the space's for Grid, the draw's for Random; with
	// spec.screening their screening trials come first, in the same order.
	Trials []Trial
	// Retrievals are the variants each trial is evaluated with.
	Retrievals []Retrieval
	// Skipped are template combinations that no ChunkingStrategy could hold.
	Skipped []Skipped
	// GridSize is the number of combinations the space lists (see GridSize); Distinct the
	// number of trials they make once merged by revision.
	GridSize, Distinct int
}

// Expand validates in.Experiment's spec (Validate) and expands its space into trials. It fails
// when a strategyRef names a strategy missing from in.Referenced (the error names the field).
// The objects carry names, namespace, labels and specs; owner references are the caller's.
func Expand(in Input) (*Plan, error) {
	exp := in.Experiment
	spec := &exp.Spec
	if err := Validate(spec); err != nil {
		return nil, err
	}
	combos, skipped := Strategies(&spec.Space)
	for i := range combos {
		if c := &combos[i]; c.Ref != "" {
			s, ok := in.Referenced[c.Ref]
			if !ok {
				return nil, fmt.Errorf("%s.strategyRef: ChunkingStrategy %q not found in namespace %s", c.Field, c.Ref, exp.Namespace)
			}
			c.Spec = s.DeepCopy()
		}
	}
	p := &Plan{Retrievals: Retrievals(&spec.Space), Skipped: skipped, GridSize: GridSize(spec)}
	expLabel := boundedName(exp.Name)
	byRevision := map[string]int{}
	names := map[string]bool{}
	var all []Trial
	for _, c := range combos {
		for _, m := range spec.Space.Models {
			idx := &ragopsv1alpha1.Index{
				ObjectMeta: metav1.ObjectMeta{Namespace: exp.Namespace},
				Spec:       indexSpec(exp, c, m),
			}
			rev := in.Revision(*c.Spec, idx, in.Format)
			if k, ok := byRevision[rev]; ok {
				if t := &all[k]; t.Strategy.Name != c.Name && !slices.Contains(t.Merged, c.Name) {
					t.Merged = append(t.Merged, c.Name)
				}
				continue
			}
			name := boundedName(exp.Name + "-" + c.Name + "-" + m.Name)
			if names[name] { // two raw names that map to one label
				name = boundedName(exp.Name + "-" + c.Name + "-" + m.Name + "/" + rev)
			}
			names[name] = true
			t := Trial{
				Name: name, Strategy: c, Model: m, Revision: rev, Parameters: parameters(c, m),
				Labels: map[string]string{ragopsv1alpha1.LabelExperiment: expLabel, ragopsv1alpha1.LabelTrial: name},
				Index:  idx,
			}
			idx.Name, idx.Labels = name, copyLabels(t.Labels, nil)
			if c.Ref == "" {
				t.ChunkingStrategy = &ragopsv1alpha1.ChunkingStrategy{
					ObjectMeta: metav1.ObjectMeta{Name: idx.Spec.StrategyRef.Name, Namespace: exp.Namespace,
						Labels: map[string]string{ragopsv1alpha1.LabelExperiment: expLabel}},
					Spec: *c.Spec.DeepCopy(),
				}
			}
			for _, r := range p.Retrievals {
				t.Evaluations = append(t.Evaluations, evaluation(exp, &t, r))
			}
			byRevision[rev] = len(all)
			all = append(all, t)
		}
	}
	p.Distinct = len(all)
	p.Trials = all
	if spec.Algorithm.Type == ragopsv1alpha1.AlgorithmRandom && spec.Algorithm.MaxTrials != nil {
		p.Trials = draw(all, spec.Algorithm.Seed, int(*spec.Algorithm.MaxTrials))
	}
	if spec.Screening != nil {
		p.Trials = append(screeningTrials(in, p), p.Trials...)
	}
	return p, nil
}

// screeningTrials returns one screening trial per chosen trial of p (Trial.Screens), in the
// same order, and links each chosen trial to its own (Trial.ScreenedBy).
func screeningTrials(in Input, p *Plan) []Trial {
	exp := in.Experiment
	sc := exp.Spec.Screening
	out := make([]Trial, 0, len(p.Trials))
	for i := range p.Trials {
		full := &p.Trials[i]
		name := boundedName(full.Name + "-screen")
		idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: exp.Namespace, Name: name},
			Spec: *full.Index.Spec.DeepCopy()}
		idx.Spec.Sample = &ragopsv1alpha1.DocumentSample{Fraction: sc.Fraction, Seed: sc.Seed, Judged: exp.Spec.Dataset.DeepCopy()}
		t := Trial{Name: name, Strategy: full.Strategy, Merged: full.Merged, Model: full.Model,
			Revision: in.Revision(*full.Strategy.Spec, idx, in.Format), Parameters: full.Parameters,
			Labels:           map[string]string{ragopsv1alpha1.LabelExperiment: full.Labels[ragopsv1alpha1.LabelExperiment], ragopsv1alpha1.LabelTrial: name},
			ChunkingStrategy: full.ChunkingStrategy, Index: idx, Screens: full.Name}
		idx.Labels = copyLabels(t.Labels, nil)
		for _, r := range p.Retrievals {
			t.Evaluations = append(t.Evaluations, evaluation(exp, &t, r))
		}
		full.ScreenedBy = name
		out = append(out, t)
	}
	return out
}

// StrategyName is the name of the ChunkingStrategy an Experiment generates for a template
// combination: <experiment>-<combination> as a DNS label of at most 63 characters.
func StrategyName(experiment, combination string) string {
	return boundedName(experiment + "-" + combination)
}

// indexSpec is the trial Index's spec: the Experiment's corpus and index template, the
// combination's strategy and the model; one revision kept (a trial has one build).
func indexSpec(exp *ragopsv1alpha1.Experiment, c Combination, m ragopsv1alpha1.ModelSpec) ragopsv1alpha1.IndexSpec {
	spec := &exp.Spec
	tpl := spec.IndexTemplate.DeepCopy()
	strategy := c.Ref
	if strategy == "" {
		strategy = StrategyName(exp.Name, c.Name)
	}
	return ragopsv1alpha1.IndexSpec{
		CorpusRef:   spec.CorpusRef,
		StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: strategy},
		Model:       *m.DeepCopy(),
		Embedder:    tpl.Embedder,
		Weaviate:    tpl.Weaviate,
		VectorIndex: tpl.VectorIndex,
		Rollout:     ragopsv1alpha1.RolloutSpec{Policy: ragopsv1alpha1.RolloutImmediate, RevisionHistoryLimit: 1},
		Serving:     ragopsv1alpha1.ServingSpec{Enabled: new(bool)}, // Evaluations embed their own queries: no model server (issue 55 item 15)
	}
}

// evaluation is the Evaluation of trial t with retrieval variant r.
func evaluation(exp *ragopsv1alpha1.Experiment, t *Trial, r Retrieval) *ragopsv1alpha1.Evaluation {
	spec := &exp.Spec
	ks := []int32{spec.Objective.K}
	if spec.Objective.K != 10 {
		ks = append(ks, 10) // @10 feeds the Evaluation's printer columns
		slices.Sort(ks)
	}
	p := ragopsv1alpha1.EvaluationParameters{
		Dataset: *spec.Dataset.DeepCopy(), Mode: r.Mode, K: ks, MaxQueries: spec.MaxQueries,
		Template: *spec.EvaluationTemplate.DeepCopy(),
	}
	if r.Hybrid != nil {
		p.Hybrid = r.Hybrid.DeepCopy()
	}
	return &ragopsv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: boundedName(t.Name + "-" + r.Name), Namespace: exp.Namespace,
			Labels: copyLabels(t.Labels, map[string]string{ragopsv1alpha1.LabelRetrieval: r.Name})},
		Spec: ragopsv1alpha1.EvaluationSpec{
			IndexRef: ragopsv1alpha1.LocalObjectReference{Name: t.Name}, Revision: t.Revision,
			RerunOnRevisionChange: new(bool), EvaluationParameters: p,
		},
	}
}

func copyLabels(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// parameters describes a trial (see Trial.Parameters).
func parameters(c Combination, m ragopsv1alpha1.ModelSpec) map[string]string {
	s := c.Spec
	p := map[string]string{
		"type": string(s.Type), "unit": string(s.Unit), "size": strconv.Itoa(int(s.Size)),
		"overlap": strconv.Itoa(int(s.Overlap)), "late": "false", "model": m.Name,
	}
	if p["unit"] == "" {
		p["unit"] = string(ragopsv1alpha1.UnitTokens)
	}
	if s.SlidingWindow != nil {
		p["stride"] = strconv.Itoa(int(s.SlidingWindow.Stride))
	}
	if s.Late != nil && s.Late.Enabled {
		p["late"] = "true"
		p["window"] = strconv.Itoa(int(s.Late.Window))
		p["windowOverlap"] = strconv.Itoa(int(s.Late.WindowOverlap))
	}
	if c.Ref != "" {
		p["strategyRef"] = c.Ref
	}
	return p
}

// draw returns the n trials with the smallest SHA-256(seed, revision), in that order.
func draw(all []Trial, seed int64, n int) []Trial {
	type keyed struct {
		key uint64
		t   Trial
	}
	ks := make([]keyed, len(all))
	for i, t := range all {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(seed))
		sum := sha256.Sum256(append(b[:], t.Revision...))
		ks[i] = keyed{binary.BigEndian.Uint64(sum[:8]), t}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return strings.Compare(a.t.Revision, b.t.Revision)
	})
	out := make([]Trial, 0, min(n, len(ks)))
	for _, k := range ks[:min(n, len(ks))] {
		out = append(out, k.t)
	}
	return out
}
