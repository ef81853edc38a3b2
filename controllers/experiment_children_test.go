package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/workload"
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
	failTrialBuild(t, ns, trialName(64))
	waitExperiment(t, ns, "one failed, the next building", func(e *ragopsv1alpha1.Experiment) bool { return counts(e) == "1/1/0/0/1/0" })
	failTrialBuild(t, ns, trialName(96))
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

// pvcExperiment creates a PVC Corpus "archief" (first scan played: 400 documents, 400,000
// bytes, revision pvc-rev-1) and experimentFixture's Experiment over it with sizes under a
// budget of 10 million tokens, parallelism 1; it returns the Corpus.
func pvcExperiment(t *testing.T, ns string, sizes []int32) *ragopsv1alpha1.Corpus {
	t.Helper()
	ctx := context.Background()
	pvc := readOnlyClaim(ns, "archief")
	archief := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archief"},
		Spec: ragopsv1alpha1.CorpusSpec{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "archief"}}}
	for _, o := range []client.Object{pvc, archief} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pvc.Status.Phase = corev1.ClaimBound
	if err := env.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	experimentFixture(t, ns, sizes, func(e *ragopsv1alpha1.Experiment) {
		e.Spec.CorpusRef.Name = "archief"
		e.Spec.Budget = &ragopsv1alpha1.ExperimentBudget{MaxTokens: ptr.To[int64](10_000_000)}
	})
	playScan(t, ns, archief, 1, plan.ScanResult{Documents: 400, Bytes: 400_000, Revision: "pvc-rev-1"})
	return archief
}

// playScan waits for the Corpus's n-th scan Job and finishes it with res.
func playScan(t *testing.T, ns string, c *ragopsv1alpha1.Corpus, n int, res plan.ScanResult) {
	t.Helper()
	var scan batchv1.Job
	eventually(t, 30*time.Second, fmt.Sprintf("scan Job %d of the Corpus", n), func() (bool, error) {
		jobs := ownedJobs(t, ns, c)
		for _, j := range jobs {
			if j.Status.Succeeded == 0 && j.Status.Failed == 0 {
				scan = j
			}
		}
		return len(jobs) == n && scan.Name != "", nil
	})
	b, _ := json.Marshal(res)
	finishJob(t, &scan, 0, string(b))
}

// estimateJobs lists the estimate Jobs in ns not being deleted, with their plans.
func estimateJobs(t *testing.T, ns string) ([]batchv1.Job, []plan.Estimate) {
	t.Helper()
	ctx := context.Background()
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelComponent: workload.ComponentEstimate}); err != nil {
		t.Fatal(err)
	}
	var live []batchv1.Job
	var plans []plan.Estimate
	for _, j := range jobs.Items {
		if !j.DeletionTimestamp.IsZero() {
			continue
		}
		var cm corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: j.Name}, &cm); err != nil {
			t.Fatal(err)
		}
		var p plan.Estimate
		if err := plan.Decode([]byte(cm.Data[plan.File]), &p); err != nil {
			t.Fatal(err)
		}
		live, plans = append(live, j), append(plans, p)
	}
	return live, plans
}

// finishEstimate finishes an estimate Job with 700 tokens for every trial of its plan, as
// estimated on a corpus of documents.
func finishEstimate(t *testing.T, job *batchv1.Job, p plan.Estimate, documents int64) {
	t.Helper()
	res := plan.EstimateResult{Documents: documents, Bytes: documents * 1000, SampleDocuments: 32}
	for _, tr := range p.Trials {
		res.Trials = append(res.Trials, plan.TrialEstimate{Name: tr.Name, Revision: tr.Revision, Tokens: 700, Chunks: 7})
	}
	b, _ := json.Marshal(res)
	if len(b) > 4096 {
		t.Fatalf("estimate result of %d trials is %d bytes, more than a termination message holds", len(p.Trials), len(b))
	}
	finishJob(t, job, 0, string(b))
}

// More trials than one estimate Job's result holds (issue 55 item 21: 32 trials gave 5,321
// bytes against the 4 KiB termination message, and every trial then ran alone) are
// estimated by one Job after another, each with at most 10 trials; every trial gets its
// estimate.
func TestExperimentEstimatesManyTrialsInBatchesOfJobs(t *testing.T) {
	ns := newNamespace(t)
	sizes := []int32{64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152}
	pvcExperiment(t, ns, sizes)
	var jobs []batchv1.Job
	var plans []plan.Estimate
	eventually(t, 30*time.Second, "the first estimate Job", func() (bool, error) {
		jobs, plans = estimateJobs(t, ns)
		return len(jobs) == 1, nil
	})
	if n := len(plans[0].Trials); n != 10 {
		t.Fatalf("the first estimate Job estimates %d trials, want 10 (a result that fits 4 KiB)", n)
	}
	first := jobs[0].Name
	finishEstimate(t, &jobs[0], plans[0], 400)
	eventually(t, 30*time.Second, "the second estimate Job, with the two trials left", func() (bool, error) {
		jobs, plans = estimateJobs(t, ns)
		return len(jobs) == 1 && jobs[0].Name != first, nil
	})
	if n := len(plans[0].Trials); n != 2 {
		t.Fatalf("the second estimate Job estimates %d trials, want 2", n)
	}
	exp := getExperiment(t, ns)
	for _, ts := range exp.Status.Trials {
		if slices.ContainsFunc(plans[0].Trials, func(e plan.EstimateTrial) bool { return e.Name == ts.Name }) {
			if ts.Phase != ragopsv1alpha1.TrialPending || ts.EstimateError != "" || ts.EstimateSampleDocuments != 0 {
				t.Fatalf("trial %s of the second batch %s %q (error %q), want it Pending without an estimate or an error", ts.Name, ts.Phase, ts.Message, ts.EstimateError)
			}
		}
	}
	finishEstimate(t, &jobs[0], plans[0], 400)
	waitExperiment(t, ns, "every trial estimated", func(e *ragopsv1alpha1.Experiment) bool {
		for _, ts := range e.Status.Trials {
			if ts.EstimatedTokens != 700 || ts.EstimateSampleDocuments != 32 || ts.EstimateError != "" {
				return false
			}
		}
		return len(e.Status.Trials) == len(sizes)
	})
}

// A Corpus revision during a running estimate does not restart it (issue 55 item 21: a busy
// Corpus never got an estimate): the Job runs on, and its figures hold while the corpus is
// within 10% of what it listed.
func TestExperimentLetsARunningEstimateFinishAcrossCorpusRevisions(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	archief := pvcExperiment(t, ns, []int32{64, 96})
	var jobs []batchv1.Job
	var plans []plan.Estimate
	eventually(t, 30*time.Second, "the estimate Job", func() (bool, error) {
		jobs, plans = estimateJobs(t, ns)
		return len(jobs) == 1, nil
	})
	// The Corpus changes (a spec edit rescans) while the estimate runs: 410 documents.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c ragopsv1alpha1.Corpus
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(archief), &c); err != nil {
			return err
		}
		c.Spec.MaxDocumentBytes = 1 << 20
		return env.Client.Update(ctx, &c)
	}); err != nil {
		t.Fatal(err)
	}
	playScan(t, ns, archief, 2, plan.ScanResult{Documents: 410, Bytes: 410_000, Revision: "pvc-rev-2"})
	eventually(t, 30*time.Second, "the Corpus on its second revision", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(archief), &c)
		return err == nil && c.Status.Revision == "pvc-rev-2", err
	})
	touch := getExperiment(t, ns)
	metav1.SetMetaDataAnnotation(&touch.ObjectMeta, "test/touched", "1")
	if err := env.Client.Update(ctx, touch); err != nil {
		t.Fatal(err)
	}
	waitExperiment(t, ns, "the touch reconciled", func(e *ragopsv1alpha1.Experiment) bool { return e.Annotations["test/touched"] == "1" })
	now, _ := estimateJobs(t, ns)
	if len(now) != 1 || now[0].Name != jobs[0].Name {
		t.Fatalf("estimate Jobs after the Corpus revision %v, want the running %s alone", jobNames(now), jobs[0].Name)
	}
	finishEstimate(t, &jobs[0], plans[0], 400)
	waitExperiment(t, ns, "a trial building on the earlier revision's estimate", func(e *ragopsv1alpha1.Experiment) bool {
		ts := trialOf(e, trialName(64))
		return ts != nil && ts.Phase == ragopsv1alpha1.TrialBuilding && ts.EstimatedTokens == 700
	})
}

func jobNames(jobs []batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// A sampled build reports its progress against the sample, not the whole corpus (issue 55
// item 21: "176/5183" for a 387-document sample): of three documents with one judged and
// fraction 0.5, about two are built.
func TestSampledBuildProgressCountsTheSample(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	queries := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queries"}, Data: map[string]string{
		"queries.jsonl":  `{"_id":"q1","text":"besluit van de raad"}` + "\n",
		"qrels-test.tsv": "query-id\tcorpus-id\tscore\nq1\ta\t1\n",
	}}
	if err := env.Client.Create(ctx, queries); err != nil {
		t.Fatal(err)
	}
	fixture(t, ns, func(idx *ragopsv1alpha1.Index) {
		idx.Spec.Sample = &ragopsv1alpha1.DocumentSample{Fraction: 0.5, Seed: 1,
			Judged: &ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}
	})
	var idx *ragopsv1alpha1.Index
	eventually(t, 60*time.Second, "build progress", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return idx.Status.Build != nil && idx.Status.Progress != "", nil
	})
	if idx.Status.Progress != "0/2 (0%)" || idx.Status.Build.DocumentsTotal != 2 {
		t.Fatalf("progress %q (total %d), want 0/2 (0%%): the sample's size", idx.Status.Progress, idx.Status.Build.DocumentsTotal)
	}
}
