package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/workload"
)

// Evaluation condition reasons.
const (
	ReasonIndexNotFound    = "IndexNotFound"
	ReasonIndexNotReady    = "IndexNotReady"
	ReasonRevisionNotFound = "RevisionNotFound"
	ReasonEvaluating       = "Evaluating"
	ReasonEvaluationFailed = "EvaluationFailed"
	ReasonEvaluated        = "Evaluated"
	// ReasonQueryEmbeddingUnavailable: spec.queryEmbedding Weaviate on an Index whose
	// revisions are not wired to a model server (serving disabled, Weaviate without the
	// text2vec-transformers module).
	ReasonQueryEmbeddingUnavailable = "QueryEmbeddingUnavailable"
	evaluationJobsKept              = 1
	metricDecimals                  = 4
)

// EvaluationReconciler runs `ragops evaluate` Jobs against an Index revision and writes the
// metrics, rounded to 4 decimals, into status and the printer columns.
type EvaluationReconciler struct {
	client.Client
	Events  events.EventRecorder
	Options Options
	// PodLogs reads the evaluate pod's log, where the per-query results are framed
	// (SetupWithManager sets NewPodLogs of the manager's config when nil).
	PodLogs PodLogs

	written ownWrites
}

// +kubebuilder:rbac:groups=ragops.dev,resources=evaluations,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=ragops.dev,resources=evaluations/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// evaluationState carries what the steps of an Evaluation reconcile resolve.
type evaluationState struct {
	ev  *ragopsv1alpha1.Evaluation
	idx ragopsv1alpha1.Index
	// rev is the revision measured: spec.revision, else the Index's active one.
	rev *ragopsv1alpha1.RevisionStatus
	// newSlot: a schedule time passed since the last run, which starts a new one.
	newSlot bool
	// slotWaiting says which slot waits for the run in progress (concurrencyPolicy Forbid).
	slotWaiting string
	job         *batchv1.Job
	// collected: this reconcile read a finished run's result into status.
	collected bool
}

// Reconcile drives one Evaluation through its steps (check the schedule, drop what
// spec.alert no longer covers, resolve the revision, the schedule's slot, skip what is
// measured, check that its queries can be embedded as spec.queryEmbedding says, run the Job,
// collect its result); reconcile.Summarize sets its conditions once from their merged
// result, and the quality gauge follows QualityDropped.
func (r *EvaluationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	ctx, endSpan := tracing.Reconcile(ctx, "Evaluation", req.Namespace, req.Name)
	defer func() { endSpan(retErr) }()
	var ev ragopsv1alpha1.Evaluation
	if err := r.Get(ctx, req.NamespacedName, &ev); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetEvaluation(req.Namespace, req.Name)
			metrics.ForgetConditions(req.Namespace, "Evaluation", req.Name)
			r.written.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&ev) {
		return ctrl.Result{RequeueAfter: cacheCatchUp}, nil
	}
	defer r.written.record(&ev, ev.ResourceVersion)
	if !ev.DeletionTimestamp.IsZero() {
		metrics.ForgetEvaluation(ev.Namespace, ev.Name)
		return ctrl.Result{}, nil
	}
	patcher := reconcile.NewStatusPatcher(&ev, needsAPerson)
	defer func() {
		ev.Status.ObservedGeneration = ev.Generation
		patcher.Done(ctx, r.Client, r.Events, &ev, &res, &retErr)
	}()
	st := &evaluationState{ev: &ev}
	result, err := reconcile.Run(ctx, st,
		checkSchedule,
		r.checkAlert,
		r.resolveRevision,
		r.scheduleRun,
		skipMeasured,
		checkQueryEmbedding,
		r.runEvaluation,
		r.collectEvaluation,
	)
	res = reconcile.Summarize(&ev, result)
	if st.collected {
		observeEvaluation(&ev, st.idx.Name)
	}
	observeQuality(&ev) // after QualityDropped is decided, or removed
	if err != nil {
		return ctrl.Result{}, err // the work queue backs off
	}
	return res, nil
}

// resolveRevision finds the Index and the revision to measure; it waits while the revision
// builds and stalls when the Index or a named revision does not exist or the build failed.
func (r *EvaluationReconciler) resolveRevision(ctx context.Context, st *evaluationState) (reconcile.Result, error) {
	ev, idx := st.ev, &st.idx
	if err := r.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ev.Spec.IndexRef.Name}, idx); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Stalled(ReasonIndexNotFound, fmt.Sprintf("spec.indexRef.name: Index %q not found", ev.Spec.IndexRef.Name)), nil
		}
		return reconcile.Stop, err
	}
	notReady := func(msg string) reconcile.Result {
		return reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonIndexNotReady, msg)
	}
	revName := ev.Spec.Revision
	if revName == "" {
		revName = idx.Status.ActiveRevision
	}
	if revName == "" {
		return notReady(fmt.Sprintf("Index %q has no active revision yet", idx.Name)), nil
	}
	st.rev = findRevision(idx, revName)
	if st.rev == nil {
		if ev.Spec.Revision != "" && ev.Spec.Revision != idx.Status.Revision {
			return reconcile.Stalled(ReasonRevisionNotFound, fmt.Sprintf("spec.revision: Index %q has no revision %q", idx.Name, ev.Spec.Revision)), nil
		}
		return notReady(fmt.Sprintf("revision %s of Index %q is not built yet", revName, idx.Name)), nil
	}
	switch st.rev.Phase {
	case ragopsv1alpha1.RevisionBuilding:
		return notReady(fmt.Sprintf("revision %s of Index %q is still building", revName, idx.Name)), nil
	case ragopsv1alpha1.RevisionFailed:
		return reconcile.Stalled(ReasonIndexNotReady, fmt.Sprintf("revision %s of Index %q failed to build", revName, idx.Name)), nil
	}
	return reconcile.Proceed, nil
}

// checkQueryEmbedding stalls spec.queryEmbedding Weaviate where Weaviate cannot embed the
// queries (the Index's serving disabled, or its ServingReady says Weaviate lacks the
// module) and waits while the model server of the revision measured has no ready replica.
func checkQueryEmbedding(_ context.Context, st *evaluationState) (reconcile.Result, error) {
	ev, idx := st.ev, &st.idx
	if ev.Spec.QueryEmbedding != ragopsv1alpha1.QueryEmbeddingWeaviate || ev.Spec.Mode == ragopsv1alpha1.ModeBM25 {
		return reconcile.Proceed, nil
	}
	if !idx.Spec.Serving.ServingEnabled() {
		return reconcile.Stalled(ReasonQueryEmbeddingUnavailable, fmt.Sprintf(
			"spec.queryEmbedding: Weaviate needs a model server, but Index %q sets spec.serving.enabled: false: enable it or set spec.queryEmbedding: Job", idx.Name)), nil
	}
	c, s := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionServingReady), idx.Status.Serving
	switch {
	case c == nil || s == nil: // serving just enabled: the Index has not looked at Weaviate yet
		return reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonModelServerNotReady, fmt.Sprintf(
			"spec.queryEmbedding: Weaviate waits for Index %q to report its model server (status.serving, ServingReady)", idx.Name)), nil
	case c.Reason == ReasonTransformersModuleMissing:
		return reconcile.Stalled(ReasonQueryEmbeddingUnavailable, fmt.Sprintf(
			"spec.queryEmbedding: Weaviate cannot embed query text for Index %q: %s", idx.Name, c.Message)), nil
	case s.Revision == st.rev.Name && s.ReadyReplicas == 0:
		return reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonModelServerNotReady, fmt.Sprintf(
			"spec.queryEmbedding: Weaviate: the model server %s of revision %s has no ready replica yet", s.Deployment, s.Revision)), nil
	}
	return reconcile.Proceed, nil
}

// skipMeasured ends the reconcile when there is nothing to run: a revision change the spec
// does not re-run on, or the same revision, measurement (status.measurement: only spec
// fields that change what is measured count) and retry already measured. A run in progress
// (Reconciling, e.g. a retry of a Ready Evaluation) or results still being collected are
// followed to their end.
func skipMeasured(_ context.Context, st *evaluationState) (reconcile.Result, error) {
	ev, revName := st.ev, st.rev.Name
	rerun := ev.Spec.RerunOnRevisionChange == nil || *ev.Spec.RerunOnRevisionChange
	measured := ev.Status.Measurement == workload.EvaluationMeasurement(ev) ||
		ev.Status.Measurement == "" && ev.Status.ObservedGeneration == ev.Generation // figures from before status.measurement
	current := measured && !st.newSlot
	if ev.Status.Revision != "" && ev.Status.Revision != revName && !rerun && current {
		return reconcile.Stop, nil // keeps the figures of the revision it measured
	}
	running := meta.IsStatusConditionTrue(ev.Status.Conditions, ragopsv1alpha1.ConditionReconciling)
	if ev.Status.Revision == revName && current && conditions.IsReady(ev) && ev.Annotations[AnnotationRetry] == ev.Status.LastHandledRetry && !running && !resultsPending(ev) {
		observeEvaluation(ev, st.idx.Name) // restores the series after a manager restart
		return reconcile.Stop, nil
	}
	return reconcile.Proceed, nil
}

// runEvaluation creates or follows the evaluate Job; it proceeds once the Job succeeded.
func (r *EvaluationReconciler) runEvaluation(ctx context.Context, st *evaluationState) (reconcile.Result, error) {
	ev, revName := st.ev, st.rev.Name
	w := r.evaluateWorkload(ev, &st.idx, st.rev)
	if want := ev.Annotations[workload.AnnotationCorpusRevision]; want != "" && st.rev.CorpusRevision != want {
		// A run that must measure a given corpus revision (the gate's) starts once the
		// revision holds it; one already started goes on.
		var j batchv1.Job
		if err := r.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: w.Name}, &j); apierrors.IsNotFound(err) {
			return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonIndexNotReady, fmt.Sprintf(
				"revision %s of Index %q holds corpus revision %q; the run waits for corpus revision %s (%s)", revName, st.idx.Name, st.rev.CorpusRevision, want, workload.AnnotationCorpusRevision)), nil
		} else if err != nil {
			return reconcile.Stop, err
		}
	}
	job, err := ensureJob(ctx, r.Client, r.Options.reader(r.Client), w)
	if err != nil {
		return reconcile.Stop, err
	}
	st.job = job
	r.pruneJobs(ctx, ev, job.Name)
	ev.Status.LastHandledRetry = ev.Annotations[AnnotationRetry]
	state, failure := workload.StateOf(job)
	switch state {
	case workload.Running:
		if msg, err := notStarting(ctx, r.Client, job, r.Options.PodStartTimeout, time.Now()); err != nil {
			return reconcile.Stop, err
		} else if msg != "" {
			return reconcile.Stalled(ReasonPodsNotStarting, fmt.Sprintf("Job %s cannot start: %s", job.Name, msg)).Requeue(r.Options.ProgressInterval), nil
		}
		if ev.Status.StartTime == nil || ev.Status.Revision != revName {
			ev.Status.StartTime = ptr.To(job.CreationTimestamp)
		}
		msg := fmt.Sprintf("Job %s evaluates revision %s", job.Name, revName)
		if st.slotWaiting != "" {
			msg += "; " + st.slotWaiting
		}
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonEvaluating, msg), nil
	case workload.Failed:
		msg, _, err := jobFailure(ctx, r.Options.reader(r.Client), job, failure)
		if err != nil {
			return reconcile.Stop, err
		}
		return reconcile.Stalled(ReasonEvaluationFailed, fmt.Sprintf("Job %s failed: %s", job.Name, truncate(msg, 1024))), nil
	}
	return reconcile.Proceed, nil
}

// collectEvaluation copies a succeeded Job's result into status, records the run and stores
// its per-query results. The new figures are published together with their per-query
// results, never beside an earlier run's: they are computed on a copy and copied into status
// only once the results are stored or known to be unavailable. A failure to read or write
// them keeps the previous figures, says why in ResultsStored (Unknown) and Reconciling, and
// is retried with backoff; a log that cannot be read for resultsCollectTimeout publishes the
// figures without results.
func (r *EvaluationReconciler) collectEvaluation(ctx context.Context, st *evaluationState) (reconcile.Result, error) {
	ev, job, revName := st.ev, st.job, st.rev.Name
	ok, _, err := podResults(ctx, r.Client, job)
	if err != nil {
		return reconcile.Stop, err
	}
	msg, found := ok["0"]
	if !found {
		// The pod cache can lag behind the Job's: retry with backoff rather than stall.
		return reconcile.Stop, fmt.Errorf("job %s succeeded but its pod's result is not visible yet", job.Name)
	}
	var result plan.EvaluateResult
	if err := json.Unmarshal([]byte(msg), &result); err != nil {
		return reconcile.Stalled(ReasonEvaluationFailed, fmt.Sprintf("Job %s returned an unreadable result: %v", job.Name, err)), nil
	}
	next := ev.DeepCopy()
	ApplyResult(&next.Status, result)
	next.Status.Revision = revName
	next.Status.Measurement = workload.EvaluationMeasurement(ev) // the Job's name holds it: the run measured this
	next.Status.CorpusRevision = job.Annotations[workload.AnnotationCorpusRevision]
	if next.Status.CorpusRevision == "" {
		next.Status.CorpusRevision = st.rev.CorpusRevision // a Job made before the annotation
	}
	next.Status.CompletionTime = job.Status.CompletionTime.DeepCopy()
	if next.Status.CompletionTime == nil {
		next.Status.CompletionTime = ptr.To(metav1.Now())
	}
	ready := reconcile.Stop.With(reconcile.OutcomeReady, ReasonEvaluated,
		fmt.Sprintf("revision %s: recall@10 %s over %d queries", revName, recallAt10(&next.Status), result.Queries))
	recordRun(next, job.Name, st.rev)
	if err := r.storeResults(ctx, next, job, result.Results, &ready); err != nil {
		why := fmt.Sprintf("Job %s succeeded; its figures are published once its per-query results are stored in ConfigMap %s: %v (retrying)",
			job.Name, results.ConfigMapName(ev.Name), err)
		waiting := reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonResultsCollecting, truncate(why, 1024))
		markResults(&waiting, metav1.ConditionUnknown, ReasonResultsCollecting, why)
		return waiting, err // the work queue backs off
	}
	conds := ev.Status.Conditions
	ev.Status = next.Status
	ev.Status.Conditions = conds // Summarize sets them from ready
	st.collected = true
	return ready, nil
}

// recallAt10 formats recall@10 with its interval as "0.812 ± 0.031" (half the 95%
// interval's width), or the bare figure when status has no interval.
func recallAt10(st *ragopsv1alpha1.EvaluationStatus) string {
	if st.RecallAt10 == nil {
		return fmtMetric(nil)
	}
	for _, m := range st.Metrics {
		if m.K == 10 && m.RecallInterval != nil {
			return stats.Interval{Mean: *st.RecallAt10, Lo: m.RecallInterval.Lower, Hi: m.RecallInterval.Upper}.PlusMinus()
		}
	}
	return fmtMetric(st.RecallAt10)
}

// observeEvaluation publishes an Evaluation's figures (status.metrics, one series per k) on
// the manager's metrics endpoint.
func observeEvaluation(ev *ragopsv1alpha1.Evaluation, index string) {
	for _, m := range ev.Status.Metrics {
		metrics.ObserveEvaluation(ev.Namespace, ev.Name, index, string(ev.Spec.Mode), int(m.K), m.Recall, m.NDCG, m.MRR)
	}
	if ev.Status.CompletionTime != nil {
		metrics.SetEvaluationCompleted(ev.Namespace, ev.Name, index, ev.Status.CompletionTime.Time)
	}
}

// Round rounds a metric to 4 decimals, so `kubectl get` prints 0.8612 rather than the
// float's full expansion.
func Round(v float64) float64 {
	p := math.Pow(10, metricDecimals)
	return math.Round(v*p) / p
}

func fmtMetric(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.4f", *v)
}

// ApplyResult copies an evaluation result into status, rounded; the @10 columns come from
// the k=10 entry.
func ApplyResult(st *ragopsv1alpha1.EvaluationStatus, res plan.EvaluateResult) {
	st.Queries = int32(res.Queries)
	st.Metrics = nil
	st.RecallAt10, st.NDCGAt10, st.MRRAt10 = nil, nil, nil
	for _, m := range res.Metrics {
		at := ragopsv1alpha1.MetricsAtK{
			K: int32(m.K), Recall: Round(m.Recall), NDCG: Round(m.NDCG), MRR: Round(m.MRR), Success: Round(m.Success), MAP: Round(m.MAP),
		}
		if m.SpanHit != nil {
			at.SpanHit = ptr.To(Round(*m.SpanHit))
		}
		at.RecallInterval, at.NDCGInterval, at.MRRInterval = interval(m, "recall"), interval(m, "ndcg"), interval(m, "mrr")
		at.SuccessInterval, at.MAPInterval, at.SpanHitInterval = interval(m, "success"), interval(m, "map"), interval(m, "spanHit")
		st.Metrics = append(st.Metrics, at)
		if m.K == 10 {
			st.RecallAt10, st.NDCGAt10, st.MRRAt10 = ptr.To(Round(m.Recall)), ptr.To(Round(m.NDCG)), ptr.To(Round(m.MRR))
		}
	}
	st.SpanHitRate = nil
	if res.SpanHitRate != nil {
		st.SpanHitRate = ptr.To(Round(*res.SpanHitRate))
	}
	st.UnknownQrels = int32(res.UnknownQrels)
	st.UnreadableChunks = res.UnreadableChunks
	st.Expansion = nil
	if x := res.Expansion; x != nil {
		st.Expansion = &ragopsv1alpha1.ExpansionMetrics{Mode: x.Mode, Size: int32(x.Size), K: int32(x.K),
			TokensReturned: Round(x.TokensReturned), ExpandedTokensReturned: Round(x.ExpandedTokensReturned)}
		if x.SpanRecall != nil && x.ExpandedSpanRecall != nil {
			st.Expansion.SpanRecall, st.Expansion.ExpandedSpanRecall = ptr.To(Round(*x.SpanRecall)), ptr.To(Round(*x.ExpandedSpanRecall))
		}
	}
}

// interval is the status form of measure's interval in m (nil when the worker sent none).
func interval(m plan.MetricsAtK, measure string) *ragopsv1alpha1.ConfidenceInterval {
	iv, ok := m.Intervals[measure]
	if !ok {
		return nil
	}
	return &ragopsv1alpha1.ConfidenceInterval{Lower: Round(iv.Lo), Upper: Round(iv.Hi), StdErr: Round(iv.StdErr)}
}

// evaluateWorkload describes the evaluate Job of ev against rev (see workload.Evaluate).
func (r *EvaluationReconciler) evaluateWorkload(ev *ragopsv1alpha1.Evaluation, idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) *workload.Workload {
	model, embedder := queryModel(idx, rev)
	return workload.Evaluate(workload.EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev, Retry: ev.Annotations[AnnotationRetry],
		Model: model, Embedder: embedder, Consistency: readConsistency(idx)}, r.Options.workloadDefaults())
}

// pruneJobs deletes this Evaluation's older Jobs.
func (r *EvaluationReconciler) pruneJobs(ctx context.Context, ev *ragopsv1alpha1.Evaluation, current string) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(ev.Namespace), client.MatchingFields{jobOwnerKey: "Evaluation/" + ev.Name}); err != nil {
		return
	}
	for _, j := range jobs.Items {
		if j.Name != current {
			_ = deleteJob(ctx, r.Client, ev.Namespace, j.Name)
		}
	}
}

// SetupWithManager watches Evaluations, their Jobs, and the Indexes they measure.
func (r *EvaluationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.PodLogs == nil {
		logs, err := NewPodLogs(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.PodLogs = logs
	}
	byIndex := enqueueReferrers(r.Client, func() client.ObjectList { return &ragopsv1alpha1.EvaluationList{} }, evalByIndex)
	indexChanged := predicate.Funcs{UpdateFunc: func(e evtUpdate) bool {
		a, b := e.ObjectOld.(*ragopsv1alpha1.Index), e.ObjectNew.(*ragopsv1alpha1.Index)
		return a.Status.ActiveRevision != b.Status.ActiveRevision || !slices.EqualFunc(a.Status.Revisions, b.Status.Revisions,
			func(x, y ragopsv1alpha1.RevisionStatus) bool {
				return x.Name == y.Name && x.Phase == y.Phase && x.CorpusRevision == y.CorpusRevision // a gate's run waits for a corpus revision
			}) ||
			servingOf(a) != servingOf(b) // spec.queryEmbedding Weaviate waits for it
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ragopsv1alpha1.Evaluation{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&batchv1.Job{}).
		Watches(&ragopsv1alpha1.Index{}, byIndex, builder.WithPredicates(indexChanged)).
		Named("evaluation").
		Complete(r)
}

// servingView is what checkQueryEmbedding reads of an Index.
type servingView struct {
	enabled, ready bool
	reason, rev    string
}

// servingOf is the part of idx that decides whether spec.queryEmbedding Weaviate can run.
func servingOf(idx *ragopsv1alpha1.Index) servingView {
	v := servingView{enabled: idx.Spec.Serving.ServingEnabled()}
	if c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionServingReady); c != nil {
		v.reason = c.Reason
	}
	if s := idx.Status.Serving; s != nil {
		v.ready, v.rev = s.ReadyReplicas > 0, s.Revision
	}
	return v
}
