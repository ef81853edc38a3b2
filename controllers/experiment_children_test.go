package controllers_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// spec.objective is immutable (issue 55 item 18): the finished trials were measured and
// ranked on it, and a cleaned-up trial cannot be measured again; admission says so.
func TestExperimentObjectiveIsImmutable(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	experimentFixture(t, ns, []int32{64}, nil)
	for _, edit := range []func(*ragopsv1alpha1.ExperimentObjective){
		func(o *ragopsv1alpha1.ExperimentObjective) { o.K = 5 },
		func(o *ragopsv1alpha1.ExperimentObjective) { o.Metric = ragopsv1alpha1.ObjectiveNDCG },
	} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			exp := getExperiment(t, ns)
			edit(&exp.Spec.Objective)
			return env.Client.Update(ctx, exp)
		})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "objective is immutable") {
			t.Fatalf("editing spec.objective: %v, want Invalid: objective is immutable", err)
		}
	}
}

// A spec.screening edit reaches the screening trials' Indexes (issue 55 item 18): their
// sample takes the new fraction and the Index builds the revision the trial expects, instead
// of building the old sample's revision while the trial waits for another forever.
func TestExperimentScreeningEditReachesTheScreeningIndexes(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	experimentFixture(t, ns, []int32{64}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.5, Seed: 4, TopN: 1}
	})
	s64 := trialName(64) + "-screen"
	waitIndex(t, ns, s64)
	eventually(t, 30*time.Second, "the screening Index's revision", func() (bool, error) {
		return getIndex(t, ns, s64).Status.Revision != "", nil
	})
	before := getIndex(t, ns, s64).Status.Revision
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		exp := getExperiment(t, ns)
		exp.Spec.Screening.Fraction, exp.Spec.Screening.Seed = 0.25, 7
		return env.Client.Update(ctx, exp)
	}); err != nil {
		t.Fatal(err)
	}
	exp := waitExperiment(t, ns, "the edit reconciled", func(e *ragopsv1alpha1.Experiment) bool {
		ts := trialOf(e, s64)
		return ts != nil && ts.Revision != before
	})
	want := trialOf(exp, s64).Revision
	eventually(t, 60*time.Second, "the screening Index on the new sample and revision", func() (bool, error) {
		idx := getIndex(t, ns, s64)
		s := idx.Spec.Sample
		return s != nil && s.Fraction == 0.25 && s.Seed == 7 && idx.Status.Revision == want, nil
	})
	playTrial(t, ns, s64, 0.5, 0.4)
	waitExperiment(t, ns, "the screening trial succeeded", func(e *ragopsv1alpha1.Experiment) bool {
		ts := trialOf(e, s64)
		return ts != nil && ts.Phase == ragopsv1alpha1.TrialSucceeded
	})
}

// A trial whose Index name an Index the Experiment does not control holds (issue 55 item 21)
// does not show Building forever: the Experiment is Stalled ChildConflict naming it, the
// trial stays Pending with the same message, and the foreign Index is left alone.
func TestExperimentTrialNameTakenByAForeignIndexIsAChildConflict(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	t64 := trialName(64)
	_, foreign := strategyAndIndex(ns)
	foreign.Name = t64
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	experimentFixture(t, ns, []int32{64}, nil)
	exp := waitExperiment(t, ns, "Stalled ChildConflict", func(e *ragopsv1alpha1.Experiment) bool {
		c := condition(e, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "ChildConflict"
	})
	want := fmt.Sprintf("trial %s: Index %q exists and is not this Experiment's", t64, t64)
	if c := condition(exp, ragopsv1alpha1.ConditionStalled); !strings.HasPrefix(c.Message, want) {
		t.Fatalf("Stalled message %q, want it to start with %q", c.Message, want)
	}
	if ts := trialOf(exp, t64); ts == nil || ts.Phase != ragopsv1alpha1.TrialPending || !strings.HasPrefix(ts.Message, want) {
		t.Fatalf("trial %+v, want Pending with the conflict", ts)
	}
	if idx := getIndex(t, ns, t64); metav1.GetControllerOf(idx) != nil || !idx.DeletionTimestamp.IsZero() {
		t.Fatalf("the foreign Index was taken over or deleted: %+v", idx.ObjectMeta)
	}
}

// A Stalled Experiment (too many failed trials) with nothing running cleans up its trials
// per spec.cleanup (issue 55 item 21): no trial starts until a person raises
// spec.maxFailedTrials, so the failed trials' Indexes (collections, servers) go; the status
// keeps their figures.
func TestStalledExperimentCleansUpItsTrials(t *testing.T) {
	ns := newNamespace(t)
	experimentFixture(t, ns, []int32{64, 96, 128}, func(e *ragopsv1alpha1.Experiment) { e.Spec.MaxFailedTrials = 1 })
	fail := func(name string) {
		t.Helper()
		var idx *ragopsv1alpha1.Index
		waitIndex(t, ns, name)
		eventually(t, 30*time.Second, "revision of "+name, func() (bool, error) {
			idx = getIndex(t, ns, name)
			return idx.Status.Revision != "", nil
		})
		finishJob(t, waitJob(t, ns, fmt.Sprintf("%s-%s-build", name, idx.Status.Revision)), 1, `{"error":"embedder: out of memory"}`)
	}
	fail(trialName(64))
	waitExperiment(t, ns, "one failed, the next building", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "1/1/0/0/1/0" })
	fail(trialName(96))
	waitExperiment(t, ns, "Stalled TooManyFailedTrials", func(e *ragopsv1alpha1.Experiment) bool {
		c := condition(e, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ragopsv1alpha1.ReasonTooManyFailedTrials
	})
	eventually(t, 60*time.Second, "the failed trials' Indexes gone", func() (bool, error) {
		return indexNames(t, ns) == "", nil
	})
	exp := getExperiment(t, ns)
	if counts(exp) != "1/0/0/0/2/0" {
		t.Fatalf("counts %s after the cleanup, want the two failures kept", counts(exp))
	}
	if ts := trialOf(exp, trialName(96)); ts == nil || !strings.Contains(ts.Message, "out of memory") {
		t.Fatalf("failed trial after the cleanup: %+v", ts)
	}
}

// A space whose status cannot be held in one object is refused at admission (issue 55 item
// 21): 1,000 Random trials x 22 Hybrid variants would be megabytes of status.trials.
func TestExperimentTooLargeForItsStatusIsRefused(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	exp := &ragopsv1alpha1.Experiment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "huge"},
		Spec: ragopsv1alpha1.ExperimentSpec{
			CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			Dataset:   ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}},
			Objective: ragopsv1alpha1.ExperimentObjective{Metric: ragopsv1alpha1.ObjectiveRecall, K: 10},
			Algorithm: ragopsv1alpha1.ExperimentAlgorithm{Type: ragopsv1alpha1.AlgorithmRandom, Seed: 1, MaxTrials: ptr.To[int32](1000)},
			Space: ragopsv1alpha1.SearchSpace{
				Strategies: []ragopsv1alpha1.StrategyCandidate{{Template: &ragopsv1alpha1.StrategyTemplate{
					Name: "fixed", Types: []ragopsv1alpha1.StrategyType{ragopsv1alpha1.StrategyFixed}, Unit: ragopsv1alpha1.UnitCharacters, Sizes: []int32{64, 96}}}},
				Models: []ragopsv1alpha1.ModelSpec{{Name: "m", ImagePath: "/models/m"}},
				Modes: []ragopsv1alpha1.RetrievalCandidate{{Mode: ragopsv1alpha1.ModeHybrid,
					Alphas:  []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1},
					Fusions: []ragopsv1alpha1.FusionType{ragopsv1alpha1.FusionRanked, ragopsv1alpha1.FusionRelativeScore}}},
			},
			IndexTemplate: ragopsv1alpha1.TrialIndexTemplate{Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr}},
		}}
	err := env.Client.Create(ctx, exp)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.trials would hold 1000 trials (screening ones included) x 22 retrieval variants") {
		t.Fatalf("create: %v, want Invalid naming 1000 trials x 22 variants", err)
	}
	// The same space with 200 trials fits (200 x (22 + 8) = 6000).
	exp.Spec.Algorithm.MaxTrials = ptr.To[int32](200)
	if err := env.Client.Create(ctx, exp); err != nil {
		t.Fatalf("create with 200 trials: %v", err)
	}
}

// fixtureTokens is the budget package's estimate of experimentFixture's three documents
// chunked by a Fixed strategy of size characters with the fixture's model, as
// LocalEstimator computes it (the sample is the whole corpus).
func fixtureTokens(t *testing.T, size int32) int64 {
	t.Helper()
	ctx := context.Background()
	m, err := budget.LoadModel(testenv.Need(t, "RAGOPS_MODEL_DIR", prepModel))
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{
		"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.",
		"b.md": "# Motivering\nHet voorstel past binnen de begroting.",
		"c.md": "# Stemverhouding\n21 voor, 8 tegen.",
	}
	var docs []budget.Document
	var pop budget.Population
	for _, k := range []string{"a.md", "b.md", "c.md"} {
		d, err := reader.NewMux(0, markup.Markdown{}).Read(ctx, []byte(texts[k]))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, budget.Document{Unit: budget.Unit{Key: k, Bytes: int64(len(texts[k]))}, Doc: d})
		pop.Documents++
		pop.Bytes += int64(len(texts[k]))
	}
	e, err := budget.EstimateTokens(ctx, ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: size}, m, docs, pop)
	if err != nil {
		t.Fatal(err)
	}
	return e.Tokens
}

// A screening trial is estimated and reserved at its sample's cost, not the whole corpus's
// (issue 55 item 19): with one of three documents judged and fraction 0.5 the sample is 2/3
// of the corpus, so a budget of 5/6 of the whole build starts it instead of skipping it (and
// screening its full trial out).
func TestExperimentEstimatesAScreeningTrialAtItsSamplesCost(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	whole := fixtureTokens(t, 64)
	queries := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queries"}, Data: map[string]string{
		"queries.jsonl":  `{"_id":"q1","text":"besluit van de raad"}` + "\n",
		"qrels-test.tsv": "query-id\tcorpus-id\tscore\nq1\ta\t1\n",
	}}
	if err := env.Client.Create(ctx, queries); err != nil {
		t.Fatal(err)
	}
	maxTokens := whole * 5 / 6
	experimentFixture(t, ns, []int32{64}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.5, Seed: 4, TopN: 1}
		e.Spec.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTokens: ptr.To(maxTokens)}
	})
	s64 := trialName(64) + "-screen"
	exp := waitExperiment(t, ns, "the screening trial started or skipped", func(e *ragopsv1alpha1.Experiment) bool {
		ts := trialOf(e, s64)
		return ts != nil && ts.Phase != ragopsv1alpha1.TrialPending
	})
	ts := trialOf(exp, s64)
	want := int64(math.Ceil(float64(whole) * 2 / 3))
	if ts.Phase != ragopsv1alpha1.TrialBuilding || ts.EstimatedTokens != want || exp.Status.Budget.TokensReserved != want {
		t.Fatalf("screening trial %s %q estimated %d tokens (reserved %d), want Building on %d (2/3 of the whole corpus's %d) under %d",
			ts.Phase, ts.Message, ts.EstimatedTokens, exp.Status.Budget.TokensReserved, want, whole, maxTokens)
	}
}
