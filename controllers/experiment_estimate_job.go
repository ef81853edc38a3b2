package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// Estimate Jobs: at most estimateBatch trials each, so that the result (estimateBatch x at
// most ~310 bytes: a 63-character name, a revision, the figures or an error of at most
// plan.MaxTrialErrorBytes) fits the kubelet's 4 KiB termination message; more trials are
// estimated by one Job after another. An estimate of an earlier Corpus revision holds while
// the corpus's documents and bytes are within estimateDrift of the current ones.
const (
	estimateBatch = 10
	estimateDrift = 0.10
)

// jobEstimates estimates, with estimate Jobs (`ragops estimate`), the pending trials of a
// Corpus the operator cannot read itself (every source but a ConfigMap), estimateBatch at a
// time in name order, each Job on the Experiment's seeded sample (max(32, 5%) of the
// documents, as LocalEstimator's). A finished Job's figures go into the trials' status
// (EstimatedTokens, a screening trial's for its sample (the Job counts the sample; toSample
// when it did not), or EstimateError for a trial it could not estimate and for all of its
// trials when it failed), so no Job runs
// twice for the same trials. A running Job is let finish whatever Corpus revision it started
// on (a busy Corpus would otherwise never get an estimate); its figures are taken while the
// corpus is within estimateDrift of what it listed, else it is deleted and the next reconcile
// estimates anew. waiting is not empty while trials wait for an estimate: they do not start
// before it. Errors: API failures, an unreadable Job result.
func (r *ExperimentReconciler) jobEstimates(ctx context.Context, exp *ragopsv1alpha1.Experiment, c *ragopsv1alpha1.Corpus, p *trials.Plan, statuses []ragopsv1alpha1.TrialStatus) (waiting string, err error) {
	if c.Spec.ConfigMap != nil {
		return "", nil
	}
	byName := map[string]*ragopsv1alpha1.TrialStatus{}
	trialOf, statusOf := map[string]*trials.Trial{}, map[string]*ragopsv1alpha1.TrialStatus{}
	var need []workload.EstimateTrial
	for i := range p.Trials {
		t, ts := &p.Trials[i], &statuses[i]
		if ts.Phase != ragopsv1alpha1.TrialPending || ts.EstimateSampleDocuments > 0 || ts.EstimateError != "" {
			continue
		}
		need = append(need, workload.EstimateTrial{Name: t.Name, Revision: t.Revision, Strategy: *t.Strategy.Spec, Model: t.Model, Sample: t.Index.Spec.Sample})
		trialOf[t.Name], statusOf[t.Name] = t, ts
	}
	if len(need) == 0 {
		return "", nil
	}
	if c.Status.Revision == "" {
		return fmt.Sprintf("waiting for Corpus %s's first scan before estimating the trials' tokens", c.Name), nil
	}
	sort.Slice(need, func(i, j int) bool { return need[i].Name < need[j].Name })
	left := len(need)
	need = need[:min(len(need), estimateBatch)]
	for _, e := range need {
		byName[e.Name] = statusOf[e.Name]
	}
	next := ""
	if left > len(need) {
		next = fmt.Sprintf("waiting for the token estimate of the next estimate Job (%d trials after these %d)", left-len(need), len(need))
	}
	w := workload.Estimate(workload.EstimateInputs{Experiment: exp, Corpus: c, Trials: need,
		Fraction: estimateFraction, MinDocuments: estimateMinDocs}, r.Options.workloadDefaults())
	if err := r.deleteOtherEstimates(ctx, exp, w.Name); err != nil {
		return "", err
	}
	var job batchv1.Job
	err = r.Get(ctx, client.ObjectKey{Namespace: exp.Namespace, Name: w.Name}, &job)
	if apierrors.IsNotFound(err) {
		created, err := ensureJob(ctx, r.Client, r.Options.reader(r.Client), w)
		if err != nil {
			var conflict *JobConflictError
			if errors.As(err, &conflict) {
				noEstimates(byName, conflict.Error())
				return next, nil
			}
			return "", err
		}
		return fmt.Sprintf("waiting for the token estimate of estimate Job %s", created.Name), nil
	}
	if err != nil {
		return "", err
	}
	if !job.DeletionTimestamp.IsZero() {
		return fmt.Sprintf("waiting for estimate Job %s of an earlier corpus to go", job.Name), nil
	}
	state, failure := workload.StateOf(&job)
	switch state {
	case workload.Running:
		return fmt.Sprintf("waiting for the token estimate of estimate Job %s", job.Name), nil
	case workload.Failed:
		msg, _, err := jobFailure(ctx, r.Options.reader(r.Client), &job, failure)
		if err != nil {
			return "", err
		}
		noEstimates(byName, fmt.Sprintf("estimate Job %s failed: %s", job.Name, msg))
		return next, nil
	}
	ok, _, err := podResults(ctx, r.Client, &job)
	if err != nil {
		return "", err
	}
	msg, found := ok["0"]
	if !found {
		return "", fmt.Errorf("estimate Job %s succeeded but its pod's result is not visible yet", job.Name)
	}
	var res plan.EstimateResult
	if err := json.Unmarshal([]byte(msg), &res); err != nil {
		noEstimates(byName, fmt.Sprintf("estimate Job %s returned no result: %v", job.Name, err))
		return next, nil
	}
	if drifted(res.Documents, c.Status.Documents) || drifted(res.Bytes, c.Status.Bytes) {
		// Estimated on a corpus that has changed too much since: estimate anew.
		if err := deleteJob(ctx, r.Client, job.Namespace, job.Name); err != nil {
			return "", err
		}
		return fmt.Sprintf("waiting for a new token estimate: estimate Job %s listed %d documents (%d bytes), Corpus %s now has %d (%d bytes), more than %.0f%% apart",
			job.Name, res.Documents, res.Bytes, c.Name, c.Status.Documents, c.Status.Bytes, 100*estimateDrift), nil
	}
	for _, te := range res.Trials {
		ts, ok := byName[te.Name]
		if !ok || ts.Revision != te.Revision {
			continue
		}
		if te.Error != "" {
			ts.EstimateError = fmt.Sprintf("estimate Job %s: %s", job.Name, te.Error)
			continue
		}
		tokens := te.Tokens
		if res.SampledDocuments == 0 { // a Job that did not count the sample
			tokens = r.toSample(ctx, exp, trialOf[te.Name], te.Tokens, res.Documents)
		}
		ts.EstimatedTokens, ts.EstimateSampleDocuments = tokens, int64(res.SampleDocuments)
		delete(byName, te.Name)
	}
	noEstimates(byName, fmt.Sprintf("estimate Job %s did not estimate it", job.Name))
	return next, nil
}

// drifted reports whether then and now (documents, bytes) are more than estimateDrift of
// now apart; an unknown (0) now never drifts.
func drifted(then, now int64) bool {
	if now <= 0 {
		return false
	}
	return math.Abs(float64(then-now)) > estimateDrift*float64(now)
}

// noEstimates records why on every trial of byName that has no estimate nor error yet.
func noEstimates(byName map[string]*ragopsv1alpha1.TrialStatus, why string) {
	for _, ts := range byName {
		if ts.EstimateSampleDocuments == 0 && ts.EstimateError == "" {
			ts.EstimateError = why
		}
	}
}

// deleteOtherEstimates deletes exp's estimate Jobs other than keep: those of an earlier set
// of trials (a finished batch, a changed space), whose figures no trial will take.
func (r *ExperimentReconciler) deleteOtherEstimates(ctx context.Context, exp *ragopsv1alpha1.Experiment, keep string) error {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(exp.Namespace), client.MatchingLabels{workload.LabelComponent: workload.ComponentEstimate,
		workload.LabelOwner: workload.LabelValue(exp.Name)}); err != nil {
		return err
	}
	for i := range jobs.Items {
		if j := &jobs.Items[i]; j.Name != keep && metav1.IsControlledBy(j, exp) {
			if err := deleteJob(ctx, r.Client, j.Namespace, j.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
