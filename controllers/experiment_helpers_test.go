package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/workload"
)

const prepModel = "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints"

// experimentFixture creates fixture's three-document ConfigMap Corpus "besluiten" and an
// Experiment "sweep" over Fixed strategies of the given character sizes with the real
// all-MiniLM-L6-v2 folder (its tokenizer estimates the trials' tokens), evaluated Dense and
// BM25, recall@10; mutate adjusts the spec before it is created.
func experimentFixture(t *testing.T, ns string, sizes []int32, mutate func(*ragopsv1alpha1.Experiment)) *ragopsv1alpha1.Experiment {
	t.Helper()
	modelDir := testenv.Need(t, "RAGOPS_MODEL_DIR", prepModel)
	ctx := context.Background()
	docs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: map[string]string{
		"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.",
		"b.md": "# Motivering\nHet voorstel past binnen de begroting.",
		"c.md": "# Stemverhouding\n21 voor, 8 tegen.",
	}}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
	exp := &ragopsv1alpha1.Experiment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sweep"},
		Spec: ragopsv1alpha1.ExperimentSpec{
			CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			Dataset:   ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"},
			Objective: ragopsv1alpha1.ExperimentObjective{Metric: ragopsv1alpha1.ObjectiveRecall, K: 10},
			Space: ragopsv1alpha1.SearchSpace{
				Strategies: []ragopsv1alpha1.StrategyCandidate{{Template: &ragopsv1alpha1.StrategyTemplate{
					Name: "fixed", Types: []ragopsv1alpha1.StrategyType{ragopsv1alpha1.StrategyFixed}, Unit: ragopsv1alpha1.UnitCharacters, Sizes: sizes}}},
				Models: []ragopsv1alpha1.ModelSpec{{Name: "all-minilm-l6-v2", ImagePath: modelDir}},
				Modes:  []ragopsv1alpha1.RetrievalCandidate{{Mode: ragopsv1alpha1.ModeDense}, {Mode: ragopsv1alpha1.ModeBM25}},
			},
			IndexTemplate: ragopsv1alpha1.TrialIndexTemplate{Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}},
		}}
	if mutate != nil {
		mutate(exp)
	}
	for _, o := range []client.Object{docs, corpus, exp} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	return exp
}

// trialName is the trial (and Index) name of sweep's Fixed strategy of size chars.
func trialName(size int) string { return fmt.Sprintf("sweep-fixed-%d-all-minilm-l6-v2", size) }

func getExperiment(t *testing.T, ns string) *ragopsv1alpha1.Experiment {
	t.Helper()
	var exp ragopsv1alpha1.Experiment
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sweep"}, &exp); err != nil {
		t.Fatal(err)
	}
	return &exp
}

// waitExperiment waits until the reconciled status of the Experiment's current generation
// satisfies cond, and returns it.
func waitExperiment(t *testing.T, ns, what string, cond func(*ragopsv1alpha1.Experiment) bool) *ragopsv1alpha1.Experiment {
	t.Helper()
	var exp *ragopsv1alpha1.Experiment
	eventually(t, 60*time.Second, what, func() (bool, error) {
		exp = getExperiment(t, ns)
		return exp.Status.ObservedGeneration == exp.Generation && cond(exp), nil
	})
	return exp
}

// counts is "pending/building/evaluating/succeeded/failed/skipped".
func counts(exp *ragopsv1alpha1.Experiment) string {
	c := exp.Status.TrialCounts
	return fmt.Sprintf("%d/%d/%d/%d/%d/%d", c.Pending, c.Building, c.Evaluating, c.Succeeded, c.Failed, c.Skipped)
}

func trialOf(exp *ragopsv1alpha1.Experiment, name string) *ragopsv1alpha1.TrialStatus {
	for i := range exp.Status.Trials {
		if exp.Status.Trials[i].Name == name {
			return &exp.Status.Trials[i]
		}
	}
	return nil
}

// childNames lists the names of the Experiment's labelled children of one kind, sorted.
func childNames(t *testing.T, ns string, list client.ObjectList) []string {
	t.Helper()
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns), client.HasLabels{ragopsv1alpha1.LabelExperiment}); err != nil {
		t.Fatal(err)
	}
	var names []string
	switch l := list.(type) {
	case *ragopsv1alpha1.IndexList:
		for _, o := range l.Items {
			names = append(names, o.Name)
		}
	case *ragopsv1alpha1.EvaluationList:
		for _, o := range l.Items {
			names = append(names, o.Name)
		}
	case *ragopsv1alpha1.ChunkingStrategyList:
		for _, o := range l.Items {
			names = append(names, o.Name)
		}
	}
	sort.Strings(names)
	return names
}

func indexNames(t *testing.T, ns string) string {
	return strings.Join(childNames(t, ns, &ragopsv1alpha1.IndexList{}), " ")
}

// buildJobs counts the build Jobs of an Index (every attempt).
func buildJobs(t *testing.T, ns, index string) int {
	t.Helper()
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range jobs.Items {
		if strings.HasPrefix(j.Name, index+"-") && strings.Contains(j.Name, "-build") {
			n++
		}
	}
	return n
}

// playEvaluation waits for the Evaluation's Job and finishes it with recall (nDCG and MRR a
// tenth and a fifth below) over 40 queries at k 10.
func playEvaluation(t *testing.T, ns, name string, recall float64) {
	t.Helper()
	ctx := context.Background()
	var jobs batchv1.JobList
	eventually(t, 30*time.Second, "evaluation Job of "+name, func() (bool, error) {
		err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: name})
		return err == nil && len(jobs.Items) == 1, err
	})
	res, _ := json.Marshal(plan.EvaluateResult{Queries: 40, Metrics: []plan.MetricsAtK{{K: 10, Recall: recall, NDCG: recall - 0.1, MRR: recall - 0.2}}})
	finishJob(t, &jobs.Items[0], 0, string(res))
}

// playTrial builds the trial's Index (buildRevision: 600 tokens, 6 chunks) and plays its
// Dense and BM25 Evaluations with the given recalls.
func playTrial(t *testing.T, ns, trial string, dense, bm25 float64) (rev, collection string) {
	t.Helper()
	waitIndex(t, ns, trial)
	rev, collection = buildRevision(t, ns, trial)
	playEvaluation(t, ns, trial+"-dense", dense)
	playEvaluation(t, ns, trial+"-bm25", bm25)
	return rev, collection
}

// readyExperiment waits for Ready=True on the current generation.
func readyExperiment(t *testing.T, ns string) *ragopsv1alpha1.Experiment {
	t.Helper()
	return waitExperiment(t, ns, "Experiment Ready", func(e *ragopsv1alpha1.Experiment) bool {
		c := condition(e, ragopsv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	})
}

// waitIndex waits until the Experiment has created the Index.
func waitIndex(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, "Index "+name, func() (bool, error) {
		var idx ragopsv1alpha1.Index
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &idx)
		return err == nil, nil
	})
}

// playEvaluationWithResults plays the Evaluation's Job as one that logged set (its per-query
// results) and reported set's recall@10 with its interval (finishWithResults).
func playEvaluationWithResults(t *testing.T, ns, name string, set *results.Set) {
	t.Helper()
	var jobs batchv1.JobList
	eventually(t, 30*time.Second, "evaluation Job of "+name, func() (bool, error) {
		err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: name})
		return err == nil && len(jobs.Items) == 1, err
	})
	finishWithResults(t, &jobs.Items[0], name, set)
}

// hits returns per-query results of n queries whose recall@10 is 1 for the queries in
// relevant and 0 for the others.
func hits(n int, relevant func(i int) bool) *results.Set {
	return querySet(n, func(i int) float64 {
		if relevant(i) {
			return 1
		}
		return 0
	})
}

// failTrialBuild waits for the trial Index name's revision and fails its build Job as an
// out-of-memory embedder would.
func failTrialBuild(t *testing.T, ns, name string) {
	t.Helper()
	var idx *ragopsv1alpha1.Index
	waitIndex(t, ns, name)
	eventually(t, 30*time.Second, "revision of "+name, func() (bool, error) {
		idx = getIndex(t, ns, name)
		return idx.Status.Revision != "", nil
	})
	finishJob(t, waitJob(t, ns, fmt.Sprintf("%s-%s-build", name, idx.Status.Revision)), 1, `{"error":"embedder: out of memory"}`)
}
