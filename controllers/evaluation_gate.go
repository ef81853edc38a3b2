package controllers

// The maxRegression gate as a non-inferiority test over the paired per-query results of the
// candidate's and the active revision's gating Evaluations.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/stats"
)

// ReasonGatePassed is the Event that says why a gated candidate took the alias.
const ReasonGatePassed = "GatePassed"

// gateMetric is the metric the gate decides on (status.revisions[].gateRecall).
const gateMetric = "recall@10"

// regressionVerdict decides a gate's maxRegression for candidate cand (recall@10 candRecall)
// against the active revision (base). With the per-query results of both gating
// Evaluations on the same queries it is a non-inferiority test (stats.NonInferiorityTest):
// the candidate passes when the lower bound of the gate.confidence interval of the paired
// mean difference candidate − active is at or above −maxRegression; a refusal says whether
// the candidate is worse than the margin or the evidence too thin, with the queries the
// margin needs. Without them it compares the two means, as before per-query results, and
// says so. Both decide through one rule, stats.WithinMargin (on the lower bound, on the
// difference of the means): a tie at the margin passes, so maxRegression 0 passes an
// identical candidate either way. The verdict's message is the decision either way.
func (r *IndexReconciler) regressionVerdict(ctx context.Context, idx *ragopsv1alpha1.Index, cand, active *ragopsv1alpha1.RevisionStatus, candRecall, base float64) (gateVerdict, error) {
	gate := idx.Spec.Rollout.Gate
	margin := *gate.MaxRegression
	confidence := stats.DefaultConfidence
	if gate.Confidence != nil {
		confidence = *gate.Confidence
	}
	c, a, why, err := r.pairedGateValues(ctx, idx, cand.Name, active.Name)
	if errors.Is(err, errResultsCollecting) {
		return gateVerdict{gateWaiting, fmt.Sprintf("revision %s: %v", cand.Name, err)}, nil
	}
	if err != nil {
		return gateVerdict{gateWaiting, fmt.Sprintf("revision %s: reading the gate's per-query results: %v", cand.Name, err)}, err
	}
	if why != "" {
		point := fmt.Sprintf("point comparison: %s", why)
		if !stats.WithinMargin(candRecall-base, margin) {
			return gateVerdict{gateRejected, fmt.Sprintf("revision %s recall@10 %.4f regresses more than %.4f from the active revision %s (%.4f); alias stays (%s)", cand.Name, candRecall, margin, active.Name, base, point)}, nil
		}
		return gateVerdict{gatePassed, fmt.Sprintf("revision %s recall@10 %.4f is within %.4f of the active revision %s (%.4f) (%s)", cand.Name, candRecall, margin, active.Name, base, point)}, nil
	}
	dec, err := stats.NonInferiorityTest(c.values, a.values, margin, stats.Options{Confidence: confidence, Seed: stats.Seed(c.uid, a.uid, gateMetric)})
	if err != nil {
		return gateVerdict{gateEvaluationStalled, fmt.Sprintf("revision %s: the gate cannot decide: %v", cand.Name, err)}, nil
	}
	msg := fmt.Sprintf("revision %s against the active revision %s, paired over %d gate queries at %g confidence: %s", cand.Name, active.Name, len(c.values), confidence, dec.Message(gateMetric))
	switch dec.Verdict {
	case stats.NonInferior:
		return gateVerdict{gatePassed, msg}, nil
	case stats.Inconclusive:
		return gateVerdict{gateRejected, msg + "; refused for lack of evidence, not for being worse; alias stays"}, nil
	default:
		return gateVerdict{gateRejected, msg + "; alias stays"}, nil
	}
}

// gateValues are one gating Evaluation's per-query values of gateMetric, by query ID.
type gateValues = queryValues

// pairedGateValues reads the per-query recall@10 of the gating Evaluations of revisions
// cand and active and pairs them. why is not empty when there is nothing to pair: a set is
// missing or not the one the Evaluation's status names, or the two scored different queries.
// Errors are transient reads.
func (r *IndexReconciler) pairedGateValues(ctx context.Context, idx *ragopsv1alpha1.Index, cand, active string) (c, a gateValues, why string, err error) {
	if c, why, err = r.gateValues(ctx, idx, cand); err != nil || why != "" {
		return c, a, why, err
	}
	if a, why, err = r.gateValues(ctx, idx, active); err != nil || why != "" {
		return c, a, why, err
	}
	if c.fingerprint != a.fingerprint || !slices.Equal(c.ids, a.ids) {
		return c, a, fmt.Sprintf("the gating Evaluations of %s and %s scored different queries (fingerprints %.12s and %.12s)", cand, active, c.fingerprint, a.fingerprint), nil
	}
	return c, a, "", nil
}

// errResultsCollecting is wrapped by gateValues' error while a gating Evaluation's
// per-query results are still being collected: the gate waits for them.
var errResultsCollecting = errors.New("per-query results are being collected")

// gateValues reads the per-query recall@10 of revision rev's gating Evaluation (see
// perQueryValues), from the API server like gateRecall's figures: a cached copy may still
// name the previous run's results. Errors: errResultsCollecting; transient reads.
func (r *IndexReconciler) gateValues(ctx context.Context, idx *ragopsv1alpha1.Index, rev string) (gateValues, string, error) {
	name := gateEvaluationName(idx, rev)
	var ev ragopsv1alpha1.Evaluation
	if err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: name}, &ev); err != nil {
		if apierrors.IsNotFound(err) {
			return gateValues{}, fmt.Sprintf("the gating Evaluation %s of revision %s is gone", name, rev), nil
		}
		return gateValues{}, "", err
	}
	return perQueryValues(ctx, r.Options.reader(r.Client), &ev, gateMetric, fmt.Sprintf("the gating Evaluation %s of revision %s", name, rev))
}
