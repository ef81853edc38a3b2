package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/experiment/winner"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
)

// A 3-size grid with two retrieval modes and parallelism 2: two builds run at once and the
// third waits; each trial is one Index with one build Job and two Evaluations of the same
// revision; the leaderboard ranks the six candidates by recall@10, the optimum is compared
// with the baseline (the first strategy, Dense) and the runner-up; when done the loser's Index
// and its Weaviate collection go (DeleteLosers) while the winner and the baseline stay.
func TestExperimentRunsTrialsInParallelRanksThemAndDeletesTheLoser(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	experimentFixture(t, ns, []int32{64, 96, 128}, func(e *ragopsv1alpha1.Experiment) { e.Spec.Parallelism = 2 })
	t64, t96, t128 := trialName(64), trialName(96), trialName(128)

	exp := waitExperiment(t, ns, "two trials building, one pending", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "1/2/0/0/0/0" })
	if got, want := indexNames(t, ns), t64+" "+t96; got != want {
		t.Fatalf("Indexes while two build %q, want %q", got, want)
	}
	if r := condition(exp, ragopsv1alpha1.ConditionReconciling); r == nil || r.Status != metav1.ConditionTrue {
		t.Fatalf("Reconciling while trials run: %+v", r)
	}
	idx := getIndex(t, ns, t64)
	if c := metav1.GetControllerOf(idx); c == nil || c.Kind != "Experiment" || c.Name != "sweep" {
		t.Fatalf("trial Index controller %+v", c)
	}
	if idx.Labels[ragopsv1alpha1.LabelExperiment] != "sweep" || idx.Labels[ragopsv1alpha1.LabelTrial] != t64 {
		t.Fatalf("trial Index labels %v", idx.Labels)
	}
	ts := trialOf(exp, t64)
	eventually(t, 30*time.Second, "the Index's revision", func() (bool, error) {
		idx = getIndex(t, ns, t64)
		return idx.Status.Revision != "", nil
	})
	if idx.Status.Revision != ts.Revision {
		t.Fatalf("the Index builds revision %s, the trial expects %s", idx.Status.Revision, ts.Revision)
	}
	// The estimate is the budget package's over the whole (3-document) corpus.
	m, err := budget.LoadModel(exp.Spec.Space.Models[0].ImagePath)
	if err != nil {
		t.Fatal(err)
	}
	var docs []budget.Document
	var pop budget.Population
	mux := reader.NewMux(0, markup.Markdown{})
	for _, k := range []string{"a.md", "b.md", "c.md"} {
		var cm = map[string]string{
			"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.",
			"b.md": "# Motivering\nHet voorstel past binnen de begroting.",
			"c.md": "# Stemverhouding\n21 voor, 8 tegen.",
		}
		d, err := mux.Read(ctx, []byte(cm[k]))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, budget.Document{Unit: budget.Unit{Key: k, Bytes: int64(len(cm[k]))}, Doc: d})
		pop.Documents++
		pop.Bytes += int64(len(cm[k]))
	}
	want, err := budget.EstimateTokens(ctx, ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}, m, docs, pop)
	if err != nil {
		t.Fatal(err)
	}
	if ts.EstimatedTokens != want.Tokens || ts.EstimateSampleDocuments != 3 || want.Tokens <= 0 {
		t.Fatalf("trial estimate %d tokens from %d documents, the budget package says %d from 3", ts.EstimatedTokens, ts.EstimateSampleDocuments, want.Tokens)
	}
	t.Logf("estimate of %s: %d tokens over %d chunks (3 documents)", t64, want.Tokens, want.Chunks)

	playTrial(t, ns, t64, 0.8, 0.6)
	// t64 is evaluated: a build slot is free and the third trial starts.
	waitExperiment(t, ns, "the third trial starts", func(e *ragopsv1alpha1.Experiment) bool {
		return counts(e) == "0/2/0/1/0/0"
	})
	_, c96 := playTrial(t, ns, t96, 0.7, 0.65)
	playTrial(t, ns, t128, 0.9, 0.5)
	exp = readyExperiment(t, ns)

	var order []string
	for _, e := range exp.Status.Leaderboard {
		order = append(order, e.Trial+"/"+e.Retrieval)
	}
	wantOrder := t128 + "/dense " + t64 + "/dense " + t96 + "/dense " + t96 + "/bm25 " + t64 + "/bm25 " + t128 + "/bm25"
	if strings.Join(order, " ") != wantOrder {
		t.Fatalf("leaderboard %v, want %s", order, wantOrder)
	}
	top := exp.Status.Leaderboard[0]
	if top.Rank != 1 || top.Objective.Value != 0.9 || top.Objective.Queries != 40 || top.Tokens != 600 || top.Chunks != 6 ||
		top.Metrics == nil || top.Metrics.NDCG != 0.8 || top.Parameters["size"] != "128" || top.Parameters["mode"] != "Dense" {
		t.Fatalf("leaderboard top %+v metrics %+v", top, top.Metrics)
	}
	o := exp.Status.CurrentOptimalTrial
	if o == nil || o.Trial != t128 || o.Retrieval != "dense" || o.VsBaseline == nil || o.VsBaseline.Trial != t64 ||
		o.VsBaseline.Difference != 0.1 || o.VsRunnerUp == nil || o.VsRunnerUp.Trial != t64 || o.VsRunnerUp.Difference != 0.1 {
		t.Fatalf("currentOptimalTrial %+v", o)
	}
	if exp.Status.Budget.TokensSpent != 1800 || exp.Status.Budget.TokensReserved != 0 || exp.Status.Progress != "3/3" {
		t.Fatalf("budget %+v progress %q", exp.Status.Budget, exp.Status.Progress)
	}
	for _, n := range []string{t64, t96, t128} {
		if got := buildJobs(t, ns, n); got != 1 {
			t.Errorf("%d build Jobs of %s, want 1", got, n)
		}
	}
	// DeleteLosers: t96 goes with its collection; the winner and the baseline stay.
	eventually(t, 60*time.Second, "the loser's Index gone", func() (bool, error) {
		return indexNames(t, ns) == t128+" "+t64, nil
	})
	if ok, err := directStore(t).CollectionExists(ctx, c96); err != nil || ok {
		t.Fatalf("the loser's collection %s exists=%v (%v)", c96, ok, err)
	}
	evals := childNames(t, ns, &ragopsv1alpha1.EvaluationList{})
	if got := strings.Join(evals, " "); got != t128+"-bm25 "+t128+"-dense "+t64+"-bm25 "+t64+"-dense" {
		t.Fatalf("Evaluations after cleanup %v", evals)
	}
	exp = getExperiment(t, ns)
	if ts := trialOf(exp, t96); ts == nil || ts.Phase != ragopsv1alpha1.TrialSucceeded || ts.Tokens != 600 || len(exp.Status.Leaderboard) != 6 {
		t.Fatalf("the cleaned-up trial's status %+v, leaderboard %d entries", ts, len(exp.Status.Leaderboard))
	}
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep-fixed-96"}, &cs); err == nil {
		t.Errorf("the loser's generated strategy is still there")
	}

	// ragops experiment winner: the winner's strategy under its trial's strategy name and the
	// Index patch; the leaderboard table lists the six candidates best first.
	res, err := winner.Get(ctx, env.Client, ns, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := res.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: fixed-128\n", "size: 128\n", "unit: Characters\n", `"model":{"name":"all-minilm-l6-v2","imagePath":"` + exp.Spec.Space.Models[0].ImagePath + `"},"strategyRef":{"name":"fixed-128"},"vectorIndex":{"type":"hnsw"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("winner output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ownerReferences") {
		t.Errorf("winner output carries the Experiment's ownership:\n%s", out.String())
	}
	out.Reset()
	if err := winner.Leaderboard(&out, exp); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if f := strings.Fields(lines[1]); len(lines) != 7 || len(f) < 6 || strings.Join(f[:6], " ") != "1 "+t128+" dense 0.9000 600 6" {
		t.Errorf("leaderboard table:\n%s", out.String())
	}
	t.Logf("ragops experiment winner:\n%s", func() string { var b bytes.Buffer; _ = res.Write(&b); return b.String() }())
}

// The leaderboard is ranked with confidence: every candidate carries its Evaluation's 95%
// interval, and each one below the best its comparison with the best from one max-range
// test over all four candidates' per-query recall@10 (evaluator/stats.MaxRangeTest, seeded
// by their UIDs in rank order): the difference, its simultaneous interval and the adjusted
// p-value. A candidate that differs from the best on one query is tied with it; one that
// misses 20 more queries is not. currentOptimalTrial's comparisons are the same pairs (all
// trials cost the same, so the optimal candidate is the best).
func TestExperimentLeaderboardPairsEachCandidateWithTheBest(t *testing.T) {
	ns := newNamespace(t)
	experimentFixture(t, ns, []int32{64, 96}, nil)
	t64, t96 := trialName(64), trialName(96)
	sets := map[string]*results.Set{
		t96 + "-dense": hits(40, func(i int) bool { return i < 30 }), // 0.75, the best
		t64 + "-dense": hits(40, func(i int) bool { return i < 29 }), // one query fewer: tied
		t96 + "-bm25":  hits(40, func(i int) bool { return i < 10 }), // 20 fewer: worse
		t64 + "-bm25":  hits(40, func(i int) bool { return i < 5 }),
	}
	for _, trial := range []string{t64, t96} {
		waitIndex(t, ns, trial)
		buildRevision(t, ns, trial)
		playEvaluationWithResults(t, ns, trial+"-dense", sets[trial+"-dense"])
		playEvaluationWithResults(t, ns, trial+"-bm25", sets[trial+"-bm25"])
	}
	exp := waitExperiment(t, ns, "every candidate compared with the best", func(e *ragopsv1alpha1.Experiment) bool {
		if len(e.Status.Leaderboard) != 4 || !conditions.IsReady(e) {
			return false
		}
		for _, c := range e.Status.Leaderboard[1:] {
			if c.VsBest == nil || c.VsBest.PValue == nil {
				return false
			}
		}
		return true
	})
	board := exp.Status.Leaderboard
	if board[0].Trial != t96 || board[0].Retrieval != "dense" || board[0].VsBest != nil {
		t.Fatalf("best %+v", board[0])
	}
	var values [][]float64
	var seed []string
	for _, e := range board {
		ev := getEvaluation(t, ns, e.Trial+"-"+e.Retrieval)
		ci := ev.Status.Metrics[0].RecallInterval
		if ci == nil || e.Objective.IntervalLower == nil || *e.Objective.IntervalLower != ci.Lower || *e.Objective.IntervalUpper != ci.Upper {
			t.Errorf("%s/%s objective %+v, its Evaluation's interval %+v", e.Trial, e.Retrieval, e.Objective, ci)
		}
		_, v, _ := sets[e.Trial+"-"+e.Retrieval].Column("recall@10")
		values, seed = append(values, v), append(seed, string(ev.UID))
	}
	f, err := stats.MaxRangeTest(values, stats.Options{Flips: 1999, Seed: stats.Seed(append(seed, "recall@10")...)})
	if err != nil {
		t.Fatal(err)
	}
	for j, e := range board[1:] {
		j++
		lo, hi := f.Interval(0, j, 0.05)
		vs := e.VsBest
		if vs.Trial != e.Trial || vs.Retrieval != e.Retrieval || vs.Difference != controllers.Round(f.Difference(0, j)) ||
			*vs.IntervalLower != controllers.Round(lo) || *vs.IntervalUpper != controllers.Round(hi) || *vs.PValue != controllers.Round(f.P(0, j)) {
			t.Errorf("%s/%s vsBest %+v (interval [%v, %v], p %v), the max-range test gives %.4f [%.4f, %.4f] p %.4f", e.Trial, e.Retrieval, vs,
				*vs.IntervalLower, *vs.IntervalUpper, *vs.PValue, f.Difference(0, j), lo, hi, f.P(0, j))
		}
		if tied := e.Trial == t64 && e.Retrieval == "dense"; e.TiedWithBest != tied || e.TiedWithBest != (*vs.IntervalLower <= 0) {
			t.Errorf("%s/%s tiedWithBest=%v (p %v, interval [%v, %v]), want %v", e.Trial, e.Retrieval, e.TiedWithBest, *vs.PValue, *vs.IntervalLower, *vs.IntervalUpper, tied)
		}
	}
	o := exp.Status.CurrentOptimalTrial
	if o == nil || o.Trial != t96 || o.Retrieval != "dense" || o.VsRunnerUp == nil || o.VsRunnerUp.Trial != t64 || o.VsRunnerUp.Retrieval != "dense" ||
		o.VsRunnerUp.PValue == nil || *o.VsRunnerUp.PValue != *board[1].VsBest.PValue ||
		o.VsBaseline == nil || o.VsBaseline.Trial != t64 || o.VsBaseline.IntervalLower == nil {
		t.Fatalf("currentOptimalTrial %+v", o)
	}
	t.Logf("vs runner-up: %+v; bm25 of the best trial: p %v", *o.VsRunnerUp, *board[2].VsBest.PValue)
}

// spec.promote applies the winner to the Index that serves once the Experiment is done and
// the winner is shown better than the baseline (36 of 40 queries against 24): the winner's
// strategy is created under its trial's strategy name (not owned: it outlives the
// Experiment) and the Index names it, the winner's model and its vector index, to roll out
// through its own gate. A strategy of that name with another spec is never overwritten: Promoted=False names
// it and the Index is left as it was until the conflict is gone.
func TestExperimentPromotesTheWinnerToTheServingIndex(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	exp := experimentFixture(t, ns, []int32{64, 96}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.Promote = &ragopsv1alpha1.ExperimentPromotion{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "archive"}}
		e.Spec.IndexTemplate.VectorIndex = ragopsv1alpha1.VectorIndexSpec{Type: "flat", Distance: "cosine"}
	})
	t64, t96 := trialName(64), trialName(96)
	fixed := func(name string, size int32) *ragopsv1alpha1.ChunkingStrategy {
		return &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: size}}
	}
	archive := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archive"}, Spec: ragopsv1alpha1.IndexSpec{
		CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"}, StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "current"},
		Model: ragopsv1alpha1.ModelSpec{Name: "served-model", ImagePath: exp.Spec.Space.Models[0].ImagePath}, Weaviate: exp.Spec.IndexTemplate.Weaviate}}
	for _, o := range []client.Object{fixed("current", 200), fixed("fixed-96", 100), archive} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	playTrialWithResults(t, ns, t64, 24, 20)
	playTrialWithResults(t, ns, t96, 36, 20)

	promoted := func(status metav1.ConditionStatus, reason string) *ragopsv1alpha1.Experiment {
		return waitExperiment(t, ns, fmt.Sprintf("Promoted=%s (%s)", status, reason), func(e *ragopsv1alpha1.Experiment) bool {
			c := condition(e, ragopsv1alpha1.ConditionPromoted)
			return c != nil && c.Status == status && c.Reason == reason
		})
	}
	exp = promoted(metav1.ConditionFalse, ragopsv1alpha1.ReasonPromotionConflict)
	if msg := condition(exp, ragopsv1alpha1.ConditionPromoted).Message; !strings.Contains(msg, `ChunkingStrategy "fixed-96" exists with another spec`) || exp.Status.Promotion != nil {
		t.Fatalf("conflict: %q, promotion %+v", msg, exp.Status.Promotion)
	}
	if idx := getIndex(t, ns, "archive"); idx.Spec.StrategyRef.Name != "current" || idx.Spec.Model.Name != "served-model" {
		t.Fatalf("the Index changed despite the conflict: %+v %+v", idx.Spec.StrategyRef, idx.Spec.Model)
	}
	if c := condition(exp, ragopsv1alpha1.ConditionScreened); c != nil || exp.Status.TrialCounts.Succeeded != 2 {
		t.Fatalf("without spec.screening: Screened %+v, trials %s", c, counts(exp))
	}
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fixed-96"}, &cs); err != nil || cs.Spec.Size != 100 {
		t.Fatalf("the user's strategy was overwritten: %+v (%v)", cs.Spec, err)
	}

	// The user removes the conflict and nudges the Experiment.
	if err := env.Client.Delete(ctx, &cs); err != nil {
		t.Fatal(err)
	}
	nudge := getExperiment(t, ns)
	metav1.SetMetaDataAnnotation(&nudge.ObjectMeta, "test/nudge", "1")
	if err := env.Client.Update(ctx, nudge); err != nil {
		t.Fatal(err)
	}
	exp = promoted(metav1.ConditionTrue, ragopsv1alpha1.ReasonPromoted)
	p := exp.Status.Promotion
	if p == nil || p.Index != "archive" || p.Strategy != "fixed-96" || p.Trial != t96 || p.Retrieval != "dense" || p.Model != "all-minilm-l6-v2" || p.ObservedGeneration != exp.Generation {
		t.Fatalf("status.promotion %+v", p)
	}
	idx := getIndex(t, ns, "archive")
	if idx.Spec.StrategyRef.Name != "fixed-96" || idx.Spec.Model.Name != "all-minilm-l6-v2" || idx.Spec.Model.ImagePath != exp.Spec.Space.Models[0].ImagePath ||
		idx.Spec.VectorIndex.Type != "flat" {
		t.Fatalf("the Index after promotion: %+v %+v %+v", idx.Spec.StrategyRef, idx.Spec.Model, idx.Spec.VectorIndex)
	}
	var gen ragopsv1alpha1.ChunkingStrategy
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep-fixed-96"}, &gen); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fixed-96"}, &cs); err != nil {
		t.Fatal(err)
	}
	if cs.Spec.Size != gen.Spec.Size || cs.Spec.Type != gen.Spec.Type || cs.Spec.Unit != gen.Spec.Unit || len(cs.OwnerReferences) != 0 || cs.Labels[controllers.LabelPromotedBy] != "sweep" {
		t.Fatalf("promoted strategy %+v owners %v labels %v; the trial's %+v", cs.Spec, cs.OwnerReferences, cs.Labels, gen.Spec)
	}

	// The Experiment goes; what it promoted stays.
	if err := env.Client.Delete(ctx, getExperiment(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Experiment gone", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep"}, &ragopsv1alpha1.Experiment{})
		return apierrors.IsNotFound(err), nil
	})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fixed-96"}, &cs); err != nil {
		t.Fatalf("the promoted strategy went with the Experiment: %v", err)
	}
	if idx := getIndex(t, ns, "archive"); idx.Spec.StrategyRef.Name != "fixed-96" {
		t.Fatalf("the Index after the Experiment's deletion names %s", idx.Spec.StrategyRef.Name)
	}
}

// spec.screening builds every trial on the sample first (Indexes <trial>-screen with
// spec.sample judged by the Experiment's dataset) while the full trials wait; once the round
// is done the topN best by their best variant go on, with the baseline, and the rest are
// Skipped with their rank; screening trials never enter the leaderboard.
func TestExperimentScreeningBuildsTheTopTrialsInFull(t *testing.T) {
	ns := newNamespace(t)
	exp := experimentFixture(t, ns, []int32{64, 96, 128}, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.Parallelism = 3
		e.Spec.Screening = &ragopsv1alpha1.ScreeningRound{Fraction: 0.5, Seed: 4, TopN: 1}
	})
	t64, t96, t128 := trialName(64), trialName(96), trialName(128)
	s64, s96, s128 := t64+"-screen", t96+"-screen", t128+"-screen"

	exp = waitExperiment(t, ns, "three screening builds", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "3/3/0/0/0/0" })
	if got, want := indexNames(t, ns), strings.Join([]string{s128, s64, s96}, " "); got != want {
		t.Fatalf("Indexes during screening %q, want only the screening trials' %q", got, want)
	}
	for _, name := range []string{t64, t96, t128} {
		if ts := trialOf(exp, name); ts == nil || ts.Phase != ragopsv1alpha1.TrialPending || !strings.HasPrefix(ts.Message, "waiting for the screening round (0 of 3") {
			t.Fatalf("full trial %s during screening: %+v", name, ts)
		}
	}
	if c := condition(exp, ragopsv1alpha1.ConditionScreened); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ragopsv1alpha1.ReasonScreening {
		t.Fatalf("Screened during the round: %+v", c)
	}
	idx := getIndex(t, ns, s64)
	if s := idx.Spec.Sample; s == nil || s.Fraction != 0.5 || s.Seed != 4 || s.Judged == nil || s.Judged.ConfigMap == nil || s.Judged.ConfigMap.Name != "queries" {
		t.Fatalf("screening Index sample %+v", idx.Spec.Sample)
	}
	if ts := trialOf(exp, s64); !ts.Screening || ts.Revision == trialOf(exp, t64).Revision {
		t.Fatalf("screening trial %+v shares the full trial's revision", ts)
	}

	// fixed-96 is best on the subset (by its BM25 variant), fixed-64 the baseline.
	playTrial(t, ns, s64, 0.5, 0.4)
	playTrial(t, ns, s96, 0.6, 0.8)
	playTrial(t, ns, s128, 0.7, 0.6)
	exp = waitExperiment(t, ns, "screening done", func(e *ragopsv1alpha1.Experiment) bool {
		c := condition(e, ragopsv1alpha1.ConditionScreened)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if c := condition(exp, ragopsv1alpha1.ConditionScreened); c.Reason != ragopsv1alpha1.ReasonScreeningDone || c.Message != "2 of 3 trials go on to a full build: "+t96+", "+t64 {
		t.Fatalf("Screened %+v", c)
	}
	ts := trialOf(exp, t128)
	if want := fmt.Sprintf("screened out: its screening trial %s ranked 2 of 3 on the subset (recall@10 0.7000, mean over its retrievals 0.6500); spec.screening.topN 1 go on", s128); ts.Phase != ragopsv1alpha1.TrialSkipped || ts.Message != want {
		t.Fatalf("fixed-128: %s %q\nwant Skipped %q", ts.Phase, ts.Message, want)
	}

	playTrial(t, ns, t64, 0.55, 0.45)
	playTrial(t, ns, t96, 0.65, 0.85)
	exp = readyExperiment(t, ns)
	if counts(exp) != "0/0/0/5/0/1" {
		t.Fatalf("trials %s, want 5 succeeded (3 screening, 2 full) and 1 skipped", counts(exp))
	}
	for _, e := range exp.Status.Leaderboard {
		if strings.HasSuffix(e.Trial, "-screen") {
			t.Errorf("leaderboard holds screening candidate %s/%s", e.Trial, e.Retrieval)
		}
		// The build's stored bytes (the played shard reports 9,600) reach the leaderboard.
		if e.StorageBytes != 9600 {
			t.Errorf("%s/%s storage %d bytes, want the build's 9600", e.Trial, e.Retrieval, e.StorageBytes)
		}
	}
	if o := exp.Status.CurrentOptimalTrial; o == nil || o.Trial != t96 || o.Retrieval != "bm25" || len(exp.Status.Leaderboard) != 4 {
		t.Fatalf("optimum %+v over %d candidates, want %s/bm25 of the four full ones", o, len(exp.Status.Leaderboard), t96)
	}
	// The screening Indexes go with the losers (DeleteLosers); the winner and baseline stay.
	eventually(t, 30*time.Second, "only the winner's and the baseline's Indexes", func() (bool, error) {
		return indexNames(t, ns) == t64+" "+t96, nil
	})
}
