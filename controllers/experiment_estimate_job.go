package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// jobEstimates estimates, with an estimate Job (`ragops estimate`), the pending trials of a
// Corpus the operator cannot read itself (every source but a ConfigMap), all in one Job on
// the Experiment's seeded sample (max(32, 5%) of the documents, as LocalEstimator's). A
// finished Job's figures go into the trials' status (EstimatedTokens, a screening trial's
// scaled to its sample (toSample), or EstimateError for a
// trial it could not estimate and for all of them when it failed), so no Job runs twice for
// the same trials. waiting is not empty while the Job runs: the trials it estimates do not
// start before their estimate. Errors: API failures, an unreadable Job result.
func (r *ExperimentReconciler) jobEstimates(ctx context.Context, exp *ragopsv1alpha1.Experiment, c *ragopsv1alpha1.Corpus, p *trials.Plan, statuses []ragopsv1alpha1.TrialStatus) (waiting string, err error) {
	if c.Spec.ConfigMap != nil {
		return "", nil
	}
	byName := map[string]*ragopsv1alpha1.TrialStatus{}
	trialOf := map[string]*trials.Trial{}
	var need []workload.EstimateTrial
	for i := range p.Trials {
		t, ts := &p.Trials[i], &statuses[i]
		if ts.Phase != ragopsv1alpha1.TrialPending || ts.EstimateSampleDocuments > 0 || ts.EstimateError != "" {
			continue
		}
		byName[t.Name], trialOf[t.Name] = ts, t
		need = append(need, workload.EstimateTrial{Name: t.Name, Revision: t.Revision, Strategy: *t.Strategy.Spec, Model: t.Model})
	}
	if len(need) == 0 {
		return "", nil
	}
	if c.Status.Revision == "" {
		return fmt.Sprintf("waiting for Corpus %s's first scan before estimating the trials' tokens", c.Name), nil
	}
	sort.Slice(need, func(i, j int) bool { return need[i].Name < need[j].Name })
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
				return "", nil
			}
			return "", err
		}
		return fmt.Sprintf("waiting for the token estimate of estimate Job %s", created.Name), nil
	}
	if err != nil {
		return "", err
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
		return "", nil
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
		return "", nil
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
		ts.EstimatedTokens, ts.EstimateSampleDocuments = r.toSample(ctx, exp, trialOf[te.Name], te.Tokens, res.Documents), int64(res.SampleDocuments)
		delete(byName, te.Name)
	}
	noEstimates(byName, fmt.Sprintf("estimate Job %s did not estimate it", job.Name))
	return "", nil
}

// noEstimates records why on every trial of byName that has no estimate nor error yet.
func noEstimates(byName map[string]*ragopsv1alpha1.TrialStatus, why string) {
	for _, ts := range byName {
		if ts.EstimateSampleDocuments == 0 && ts.EstimateError == "" {
			ts.EstimateError = why
		}
	}
}

// deleteOtherEstimates deletes exp's estimate Jobs other than keep: those of an earlier
// corpus revision or set of trials, whose figures no trial will take.
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
