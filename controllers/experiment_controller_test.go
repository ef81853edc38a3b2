package controllers_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/experiment/winner"
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
	for _, want := range []string{"name: fixed-128\n", "size: 128\n", "unit: Characters\n", `{"spec":{"model":{"name":"all-minilm-l6-v2","imagePath":"` + exp.Spec.Space.Models[0].ImagePath + `"},"strategyRef":{"name":"fixed-128"}}}`} {
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
