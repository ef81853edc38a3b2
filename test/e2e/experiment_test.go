package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/report"
)

// gridExperiment is issue 36's e2e grid on the e2e's SciFact Corpus: Fixed, Recursive and
// Sentence at 128 tokens, each naive and late (3 x 2 = 6 trials, one build each) with
// all-MiniLM-L6-v2, every build evaluated Dense and Hybrid (alpha 0.5, relative score
// fusion): 12 candidates ranked by recall@10, all kept (KeepAll) for the independent check.
func gridExperiment() *ragopsv1alpha1.Experiment {
	return &ragopsv1alpha1.Experiment{
		ObjectMeta: metav1.ObjectMeta{Name: "grid", Namespace: ns},
		Spec: ragopsv1alpha1.ExperimentSpec{
			CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "scifact"},
			Dataset:   ragopsv1alpha1.DatasetSource{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "scifact"}, Split: "test"},
			Objective: ragopsv1alpha1.ExperimentObjective{Metric: ragopsv1alpha1.ObjectiveRecall, K: 10},
			Space: ragopsv1alpha1.SearchSpace{
				Strategies: []ragopsv1alpha1.StrategyCandidate{{Template: &ragopsv1alpha1.StrategyTemplate{
					Name:  "s",
					Types: []ragopsv1alpha1.StrategyType{ragopsv1alpha1.StrategyFixed, ragopsv1alpha1.StrategyRecursive, ragopsv1alpha1.StrategySentence},
					Unit:  ragopsv1alpha1.UnitTokens, Sizes: []int32{128},
					Late: []ragopsv1alpha1.LateChunkingOptions{{Enabled: false}, {Enabled: true, Window: 512, WindowOverlap: 128}},
				}}},
				Models: []ragopsv1alpha1.ModelSpec{{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"}},
				Modes: []ragopsv1alpha1.RetrievalCandidate{
					{Mode: ragopsv1alpha1.ModeDense},
					{Mode: ragopsv1alpha1.ModeHybrid, Alphas: []float64{0.5}, Fusions: []ragopsv1alpha1.FusionType{ragopsv1alpha1.FusionRelativeScore}},
				},
			},
			IndexTemplate: ragopsv1alpha1.TrialIndexTemplate{
				Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://127.0.0.1:28080", GRPCAddress: "127.0.0.1:28079"},
				VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "flat"},
			},
			Parallelism:     2,
			LeaderboardSize: 12,
			Cleanup:         ragopsv1alpha1.CleanupKeepAll,
		},
	}
}

// TestExperimentLeaderboardEqualsIndependentEvaluations runs gridExperiment on the local
// cluster, then evaluates every leaderboard candidate again with an Evaluation of its own (not
// the Experiment's, built from the entry's parameters and the Experiment's dataset, pinned to
// the trial's revision) and checks that the leaderboard's figures equal that Evaluation's,
// digit for digit, down to every query's values and ranking; that the Evaluation ran its own
// Job; and that each trial was built once.
func TestExperimentLeaderboardEqualsIndependentEvaluations(t *testing.T) {
	lc := upCluster(t)
	k8s := lc.k8s
	ctx := context.Background()

	exp := gridExperiment()
	if err := k8s.Create(ctx, exp); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	exp = waitExperimentDone(t, k8s, exp.Name, 40*time.Minute)
	t.Logf("Experiment %s: %s in %s", exp.Name, exp.Status.Progress, time.Since(start).Round(time.Second))
	var board bytes.Buffer
	if err := report.WriteLeaderboard(&board, exp, report.CostTokens); err != nil {
		t.Fatal(err)
	}
	t.Logf("leaderboard:\n%s", board.String())

	// Six trials, one per (type, late), each its own revision, all succeeded.
	c := exp.Status.TrialCounts
	if c.Total != 6 || c.Succeeded != 6 || len(exp.Status.Trials) != 6 {
		t.Fatalf("trials %+v (%d in status), want 6 succeeded", c, len(exp.Status.Trials))
	}
	trialsByName := map[string]ragopsv1alpha1.TrialStatus{}
	combos, revisions := map[string]bool{}, map[string]bool{}
	for _, ts := range exp.Status.Trials {
		trialsByName[ts.Name] = ts
		combos[ts.Parameters["type"]+"/late="+ts.Parameters["late"]] = true
		revisions[ts.Revision] = true
		assertBuiltOnce(t, k8s, exp, ts)
	}
	if len(combos) != 6 || len(revisions) != 6 {
		t.Errorf("trials cover %d (type, late) combinations with %d revisions, want 6 and 6: %v", len(combos), len(revisions), combos)
	}

	// Twelve candidates, every (trial, retrieval) once.
	lb := exp.Status.Leaderboard
	if len(lb) != 12 {
		t.Fatalf("leaderboard has %d entries, want 12 (6 trials x dense, hybrid)", len(lb))
	}
	seen := map[string]bool{}
	for _, e := range lb {
		seen[e.Trial+"/"+e.Retrieval] = true
	}
	if len(seen) != 12 {
		t.Fatalf("leaderboard repeats candidates: %v", seen)
	}

	// An independent Evaluation per entry, all created before any is waited for.
	independent := make([]*ragopsv1alpha1.Evaluation, len(lb))
	trialEvals := make([]*ragopsv1alpha1.Evaluation, len(lb))
	for i, e := range lb {
		ts := trialsByName[e.Trial]
		j := slices.IndexFunc(ts.Evaluations, func(te ragopsv1alpha1.TrialEvaluation) bool { return te.Retrieval == e.Retrieval })
		if j < 0 {
			t.Fatalf("rank %d: trial %s has no Evaluation of %s", e.Rank, e.Trial, e.Retrieval)
		}
		trialEvals[i] = getEvaluation(t, k8s, ts.Evaluations[j].Evaluation)
		independent[i] = independentEvaluation(t, fmt.Sprintf("independent-%02d", e.Rank), exp, e, ts.Revision)
		if err := k8s.Create(ctx, independent[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range independent {
		independent[i] = waitEvaluationReady(t, k8s, independent[i].Name, 20*time.Minute)
	}

	for i, e := range lb {
		ind, tr := independent[i], trialEvals[i]
		at := metricsAt(ind, 10)
		t.Logf("rank %2d %-44s %-16s leaderboard recall %.4f nDCG %.4f MRR %.4f | %s recall %.4f nDCG %.4f MRR %.4f (job %s)",
			e.Rank, e.Trial, e.Retrieval, e.Metrics.Recall, e.Metrics.NDCG, e.Metrics.MRR,
			ind.Name, at.Recall, at.NDCG, at.MRR, lastJob(ind))
		assertSameMeasure(t, e, tr, ind, trialsByName[e.Trial].Revision)
		assertOwnJob(t, k8s, ind, tr)
		assertSamePerQuery(t, k8s, tr, ind)
	}
}

// waitExperimentDone waits until the Experiment is Ready for its generation; it fails on
// Stalled or when the deadline (a guard against a hang, not a measure) passes.
func waitExperimentDone(t *testing.T, k8s client.Client, name string, limit time.Duration) *ragopsv1alpha1.Experiment {
	t.Helper()
	deadline, logged := time.Now().Add(limit), time.Now()
	for {
		var exp ragopsv1alpha1.Experiment
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &exp); err != nil {
			t.Fatal(err)
		}
		if c := apimeta.FindStatusCondition(exp.Status.Conditions, ragopsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
			t.Fatalf("Experiment %s stalled: %s: %s", name, c.Reason, c.Message)
		}
		ready := apimeta.FindStatusCondition(exp.Status.Conditions, ragopsv1alpha1.ConditionReady)
		if ready != nil && ready.Status == metav1.ConditionTrue && exp.Status.ObservedGeneration == exp.Generation {
			t.Logf("Experiment %s: %s", name, ready.Message)
			return &exp
		}
		if time.Since(logged) > time.Minute {
			logged = time.Now()
			msg := ""
			if ready != nil {
				msg = ready.Message
			}
			t.Logf("Experiment %s: %s; %s", name, exp.Status.Progress, msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Experiment %s not done after %s: %+v %+v", name, limit, exp.Status.TrialCounts, exp.Status.Conditions)
		}
		time.Sleep(5 * time.Second)
	}
}

// waitEvaluationReady waits until the Evaluation is Ready for its generation; it fails on
// Stalled or when the deadline (a hang guard) passes.
func waitEvaluationReady(t *testing.T, k8s client.Client, name string, limit time.Duration) *ragopsv1alpha1.Evaluation {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ev := getEvaluation(t, k8s, name)
		if c := apimeta.FindStatusCondition(ev.Status.Conditions, ragopsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
			t.Fatalf("Evaluation %s stalled: %s: %s", name, c.Reason, c.Message)
		}
		if apimeta.IsStatusConditionTrue(ev.Status.Conditions, ragopsv1alpha1.ConditionReady) && ev.Status.ObservedGeneration == ev.Generation && ev.Status.Results != nil {
			return ev
		}
		if time.Now().After(deadline) {
			t.Fatalf("Evaluation %s not Ready with stored results after %s: %+v", name, limit, ev.Status.Conditions)
		}
		time.Sleep(3 * time.Second)
	}
}

func getEvaluation(t *testing.T, k8s client.Client, name string) *ragopsv1alpha1.Evaluation {
	t.Helper()
	var ev ragopsv1alpha1.Evaluation
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// independentEvaluation is an Evaluation of e's trial Index made from e's parameters (mode,
// alpha, fusion) and the Experiment's dataset and cut-off, pinned to revision: no owner, no
// Experiment labels, nothing copied from the trial's Evaluation.
func independentEvaluation(t *testing.T, name string, exp *ragopsv1alpha1.Experiment, e ragopsv1alpha1.LeaderboardEntry, revision string) *ragopsv1alpha1.Evaluation {
	t.Helper()
	p := ragopsv1alpha1.EvaluationParameters{
		Dataset: *exp.Spec.Dataset.DeepCopy(), Mode: ragopsv1alpha1.RetrievalMode(e.Parameters["mode"]), K: []int32{exp.Spec.Objective.K},
	}
	switch p.Mode {
	case ragopsv1alpha1.ModeDense:
	case ragopsv1alpha1.ModeHybrid:
		alpha, err := strconv.ParseFloat(e.Parameters["alpha"], 64)
		if err != nil || e.Parameters["fusion"] == "" {
			t.Fatalf("rank %d: hybrid entry without alpha and fusion: %v", e.Rank, e.Parameters)
		}
		p.Hybrid = &ragopsv1alpha1.HybridOptions{Alpha: &alpha, Fusion: ragopsv1alpha1.FusionType(e.Parameters["fusion"])}
	default:
		t.Fatalf("rank %d: parameters name mode %q, the space has Dense and Hybrid: %v", e.Rank, p.Mode, e.Parameters)
	}
	return &ragopsv1alpha1.Evaluation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ragopsv1alpha1.EvaluationSpec{
			IndexRef: ragopsv1alpha1.LocalObjectReference{Name: e.Trial}, Revision: revision,
			RerunOnRevisionChange: ptr.To(false), EvaluationParameters: p,
		},
	}
}

// metricsAt returns ev's figures at cut-off k (zero when it has none).
func metricsAt(ev *ragopsv1alpha1.Evaluation, k int32) ragopsv1alpha1.MetricsAtK {
	if i := slices.IndexFunc(ev.Status.Metrics, func(m ragopsv1alpha1.MetricsAtK) bool { return m.K == k }); i >= 0 {
		return ev.Status.Metrics[i]
	}
	return ragopsv1alpha1.MetricsAtK{}
}

// lastJob is the Job of ev's last run, from its history.
func lastJob(ev *ragopsv1alpha1.Evaluation) string {
	if n := len(ev.Status.History); n > 0 {
		return ev.Status.History[n-1].Job
	}
	return ""
}

// assertSameMeasure checks that leaderboard entry e carries its trial Evaluation tr's figures
// at 10 (intervals included) and that the independent Evaluation ind measured revision with
// the same point figures, digit for digit: recall, nDCG, MRR, success, MAP, the objective and
// the query count. The intervals are bootstraps seeded by each Evaluation's UID (their
// resamples differ), so of them only that both hold the common mean is checked.
func assertSameMeasure(t *testing.T, e ragopsv1alpha1.LeaderboardEntry, tr, ind *ragopsv1alpha1.Evaluation, revision string) {
	t.Helper()
	if e.Metrics == nil {
		t.Errorf("rank %d %s/%s: no metrics on the leaderboard", e.Rank, e.Trial, e.Retrieval)
		return
	}
	lbm, trm, indm := *e.Metrics, metricsAt(tr, 10), metricsAt(ind, 10)
	if !reflect.DeepEqual(lbm, trm) {
		t.Errorf("rank %d %s/%s: leaderboard metrics %+v, its Evaluation %s says %+v", e.Rank, e.Trial, e.Retrieval, lbm, tr.Name, trm)
	}
	if ind.Status.Revision != revision || tr.Status.Revision != revision {
		t.Errorf("rank %d: %s measured revision %q, %s %q, the trial built %q", e.Rank, ind.Name, ind.Status.Revision, tr.Name, tr.Status.Revision, revision)
	}
	point := func(m ragopsv1alpha1.MetricsAtK) [6]float64 {
		return [6]float64{float64(m.K), m.Recall, m.NDCG, m.MRR, m.Success, m.MAP}
	}
	if point(lbm) != point(indm) {
		t.Errorf("rank %d %s/%s: leaderboard (k, recall, nDCG, MRR, success, MAP) %v, independent %s %v", e.Rank, e.Trial, e.Retrieval, point(lbm), ind.Name, point(indm))
	}
	if ind.Status.RecallAt10 == nil || *ind.Status.RecallAt10 != e.Objective.Value || e.Objective.Value != lbm.Recall {
		t.Errorf("rank %d: objective recall@10 %v, independent %s recall@10 %v, entry metrics %v", e.Rank, e.Objective.Value, ind.Name, ptr.Deref(ind.Status.RecallAt10, math.NaN()), lbm.Recall)
	}
	if e.Objective.Queries == 0 || e.Objective.Queries != ind.Status.Queries || ind.Status.Queries != tr.Status.Queries {
		t.Errorf("rank %d: objective over %d queries, %s over %d, %s over %d", e.Rank, e.Objective.Queries, ind.Name, ind.Status.Queries, tr.Name, tr.Status.Queries)
	}
	if e.Objective.IntervalLower == nil || e.Objective.IntervalUpper == nil || indm.RecallInterval == nil {
		t.Errorf("rank %d: objective interval [%v, %v], independent recall interval %v", e.Rank, e.Objective.IntervalLower, e.Objective.IntervalUpper, indm.RecallInterval)
		return
	}
	v, lo, hi, ilo, ihi := e.Objective.Value, *e.Objective.IntervalLower, *e.Objective.IntervalUpper, indm.RecallInterval.Lower, indm.RecallInterval.Upper
	if lo > v || hi < v || ilo > v || ihi < v {
		t.Errorf("rank %d: recall@10 %.4f, objective interval [%.4f, %.4f], independent %s [%.4f, %.4f]: not both around it", e.Rank, v, lo, hi, ind.Name, ilo, ihi)
	}
}

// assertOwnJob checks that the independent Evaluation ran a Job of its own: its last run's
// Job exists, is controlled by it, succeeded, and is not the trial Evaluation's.
func assertOwnJob(t *testing.T, k8s client.Client, ind, tr *ragopsv1alpha1.Evaluation) {
	t.Helper()
	name := lastJob(ind)
	if name == "" || name == lastJob(tr) {
		t.Errorf("%s: last run's Job %q, the trial Evaluation %s ran %q", ind.Name, name, tr.Name, lastJob(tr))
		return
	}
	var job batchv1.Job
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &job); err != nil {
		t.Errorf("%s: Job %s: %v", ind.Name, name, err)
		return
	}
	if owner := metav1.GetControllerOf(&job); owner == nil || owner.UID != ind.UID || job.Status.Succeeded < 1 {
		t.Errorf("%s: Job %s controlled by %+v with %d succeeded pods, want this Evaluation (%s) and 1", ind.Name, name, owner, job.Status.Succeeded, ind.UID)
	}
}

// assertSamePerQuery checks the two Evaluations' stored per-query results: each names its own
// Evaluation (UID) and the same revision and queries (fingerprint), and every query has the
// same values, first relevant rank and top documents in both.
func assertSamePerQuery(t *testing.T, k8s client.Client, tr, ind *ragopsv1alpha1.Evaluation) {
	t.Helper()
	trs, inds := perQueryResults(t, k8s, tr), perQueryResults(t, k8s, ind)
	if trs == nil || inds == nil {
		return
	}
	if trs.UID != string(tr.UID) || inds.UID != string(ind.UID) || trs.UID == inds.UID {
		t.Errorf("per-query results of %s name UID %s (its own %s), of %s %s (its own %s)", tr.Name, trs.UID, tr.UID, ind.Name, inds.UID, ind.UID)
	}
	if trs.Revision != inds.Revision || trs.Fingerprint != inds.Fingerprint || trs.Mode != inds.Mode || !slices.Equal(trs.Metrics, inds.Metrics) {
		t.Errorf("%s and %s: revision %s/%s, fingerprint %.12s/%.12s, mode %s/%s, metrics %v/%v",
			tr.Name, ind.Name, trs.Revision, inds.Revision, trs.Fingerprint, inds.Fingerprint, trs.Mode, inds.Mode, trs.Metrics, inds.Metrics)
	}
	if len(trs.Queries) == 0 || len(trs.Queries) != len(inds.Queries) {
		t.Errorf("%s has %d per-query results, %s %d", tr.Name, len(trs.Queries), ind.Name, len(inds.Queries))
		return
	}
	differ := 0
	for i, q := range trs.Queries {
		if !reflect.DeepEqual(q, inds.Queries[i]) {
			if differ == 0 {
				t.Errorf("%s and %s: query %s differs: %+v vs %+v", tr.Name, ind.Name, q.ID, q, inds.Queries[i])
			}
			differ++
		}
	}
	if differ > 0 {
		t.Errorf("%s and %s: %d of %d queries differ", tr.Name, ind.Name, differ, len(trs.Queries))
	}
}

// perQueryResults decodes ev's stored per-query results (nil after reporting an error).
func perQueryResults(t *testing.T, k8s client.Client, ev *ragopsv1alpha1.Evaluation) *results.Set {
	t.Helper()
	if ev.Status.Results == nil {
		t.Errorf("%s: no per-query results in status", ev.Name)
		return nil
	}
	var cm corev1.ConfigMap
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ev.Status.Results.ConfigMap}, &cm); err != nil {
		t.Errorf("%s: results ConfigMap: %v", ev.Name, err)
		return nil
	}
	set, err := results.Decode(cm.BinaryData[results.ConfigMapKey])
	if err != nil {
		t.Errorf("%s: results ConfigMap %s: %v", ev.Name, cm.Name, err)
		return nil
	}
	return set
}

// assertBuiltOnce checks that trial ts was built once: its Index is the Experiment's, holds
// one revision (the trial's, first attempt, Active), and has one build Job, that revision's.
func assertBuiltOnce(t *testing.T, k8s client.Client, exp *ragopsv1alpha1.Experiment, ts ragopsv1alpha1.TrialStatus) {
	t.Helper()
	idx := getIndex(t, k8s, ts.Name)
	if owner := metav1.GetControllerOf(idx); owner == nil || owner.UID != exp.UID {
		t.Errorf("Index %s is controlled by %+v, not Experiment %s", idx.Name, owner, exp.Name)
	}
	if len(idx.Status.Revisions) != 1 {
		t.Errorf("Index %s has %d revisions, want 1: %+v", idx.Name, len(idx.Status.Revisions), idx.Status.Revisions)
		return
	}
	rev := idx.Status.Revisions[0]
	if rev.Name != ts.Revision || rev.Attempt > 1 || rev.Phase != ragopsv1alpha1.RevisionActive || rev.Tokens != ts.Tokens || rev.Tokens == 0 {
		t.Errorf("Index %s revision %s (attempt %d, %s, %d tokens), the trial says %s with %d tokens", idx.Name, rev.Name, rev.Attempt, rev.Phase, rev.Tokens, ts.Revision, ts.Tokens)
	}
	var jobs batchv1.JobList
	if err := k8s.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{
		workload.LabelOwner: workload.LabelValue(idx.Name), workload.LabelJobKind: workload.JobKindBuild,
	}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Name)
	}
	if len(names) != 1 || names[0] != workload.BuildJobName(idx, &rev) {
		t.Errorf("Index %s has build Jobs %v, want one: %s", idx.Name, names, workload.BuildJobName(idx, &rev))
	}
	t.Logf("trial %s: %s, revision %s, %d tokens, %d chunks, built in %d s by Job %s", ts.Name,
		strings.Join([]string{ts.Parameters["type"], ts.Parameters["size"], "late=" + ts.Parameters["late"]}, " "), rev.Name, rev.Tokens, rev.Chunks, ts.BuildSeconds, strings.Join(names, ","))
}
