package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
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
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
)

// Evaluation condition reasons.
const (
	ReasonIndexNotFound     = "IndexNotFound"
	ReasonIndexNotReady     = "IndexNotReady"
	ReasonRevisionNotFound  = "RevisionNotFound"
	ReasonEvaluating        = "Evaluating"
	ReasonEvaluationFailed  = "EvaluationFailed"
	ReasonEvaluated         = "Evaluated"
	evaluationJobsKept      = 1
	defaultHybridAlpha      = 0.5
	metricDecimals          = 4
	evaluationComponentName = "evaluate"
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

// Reconcile drives one Evaluation.
func (r *EvaluationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var ev ragopsv1alpha1.Evaluation
	if err := r.Get(ctx, req.NamespacedName, &ev); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetEvaluation(req.Namespace, req.Name)
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
	patcher := newStatusPatcher(&ev)
	defer func() {
		ev.Status.ObservedGeneration = ev.Generation
		patcher.done(ctx, r.Client, r.Events, &ev, &res, &retErr)
	}()

	if ev.Spec.Schedule != "" {
		if _, err := cron.ParseStandard(ev.Spec.Schedule); err != nil {
			conditions.MarkStalled(&ev, ReasonInvalidSchedule, fmt.Sprintf("spec.schedule: %q: %v", ev.Spec.Schedule, err))
			return ctrl.Result{}, nil
		}
	}
	var idx ragopsv1alpha1.Index
	if err := r.Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: ev.Spec.IndexRef.Name}, &idx); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.MarkStalled(&ev, ReasonIndexNotFound, fmt.Sprintf("spec.indexRef.name: Index %q not found", ev.Spec.IndexRef.Name))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	revName := ev.Spec.Revision
	if revName == "" {
		revName = idx.Status.ActiveRevision
	}
	if revName == "" {
		conditions.MarkReconcilingKeepReadyOrFalse(&ev, ReasonIndexNotReady, fmt.Sprintf("Index %q has no active revision yet", idx.Name))
		return ctrl.Result{}, nil
	}
	rev := findRevision(&idx, revName)
	if rev == nil {
		if ev.Spec.Revision != "" && ev.Spec.Revision != idx.Status.Revision {
			conditions.MarkStalled(&ev, ReasonRevisionNotFound, fmt.Sprintf("spec.revision: Index %q has no revision %q", idx.Name, ev.Spec.Revision))
			return ctrl.Result{}, nil
		}
		conditions.MarkReconcilingKeepReadyOrFalse(&ev, ReasonIndexNotReady, fmt.Sprintf("revision %s of Index %q is not built yet", revName, idx.Name))
		return ctrl.Result{}, nil
	}
	switch rev.Phase {
	case ragopsv1alpha1.RevisionBuilding:
		conditions.MarkReconcilingKeepReadyOrFalse(&ev, ReasonIndexNotReady, fmt.Sprintf("revision %s of Index %q is still building", revName, idx.Name))
		return ctrl.Result{}, nil
	case ragopsv1alpha1.RevisionFailed:
		conditions.MarkStalled(&ev, ReasonIndexNotReady, fmt.Sprintf("revision %s of Index %q failed to build", revName, idx.Name))
		return ctrl.Result{}, nil
	}

	// spec.schedule: a schedule time passed since the last run starts a new one (its Job is
	// named by that time); every reconcile comes back at the next one.
	newSlot := false
	if ev.Spec.Schedule != "" {
		slot, next, err := scheduleSlot(&ev, time.Now())
		if err != nil {
			return ctrl.Result{}, err // parsed above
		}
		if slot != nil {
			ev.Status.LastScheduleTime, newSlot = ptr.To(metav1.NewTime(*slot)), true
		}
		defer func() {
			if wait := time.Until(next) + time.Second; retErr == nil && !next.IsZero() && (res.RequeueAfter == 0 || res.RequeueAfter > wait) {
				res.RequeueAfter = max(wait, time.Second)
			}
		}()
	}
	rerun := ev.Spec.RerunOnRevisionChange == nil || *ev.Spec.RerunOnRevisionChange
	if ev.Status.Revision != "" && ev.Status.Revision != revName && !rerun && ev.Status.ObservedGeneration == ev.Generation && !newSlot {
		return ctrl.Result{}, nil // keeps the figures of the revision it measured
	}
	retry := ev.Annotations[AnnotationRetry]
	// A run in progress (Reconciling, e.g. a retry of a Ready Evaluation) or results still
	// being collected are followed to their end.
	running := meta.IsStatusConditionTrue(ev.Status.Conditions, ragopsv1alpha1.ConditionReconciling)
	if ev.Status.Revision == revName && ev.Status.ObservedGeneration == ev.Generation && conditions.IsReady(&ev) && retry == ev.Status.LastHandledRetry && !running && !newSlot && !resultsPending(&ev) {
		observeEvaluation(&ev, idx.Name) // restores the series after a manager restart
		return ctrl.Result{}, nil
	}

	w := r.workload(&ev, &idx, rev)
	job, err := w.ensure(ctx, r.Client, r.Options.reader(r.Client))
	if err != nil {
		return ctrl.Result{}, err
	}
	r.pruneJobs(ctx, &ev, job.Name)
	ev.Status.LastHandledRetry = retry
	state, failure := stateOf(job)
	switch state {
	case jobRunning:
		if msg, err := notStarting(ctx, r.Client, job, r.Options.PodStartTimeout, time.Now()); err != nil {
			return ctrl.Result{}, err
		} else if msg != "" {
			conditions.MarkStalled(&ev, ReasonPodsNotStarting, fmt.Sprintf("Job %s cannot start: %s", job.Name, msg))
			return ctrl.Result{RequeueAfter: r.Options.ProgressInterval}, nil
		}
		if ev.Status.StartTime == nil || ev.Status.Revision != revName {
			ev.Status.StartTime = ptr.To(job.CreationTimestamp)
		}
		conditions.MarkReconcilingKeepReadyOrFalse(&ev, ReasonEvaluating, fmt.Sprintf("Job %s evaluates revision %s", job.Name, revName))
		return ctrl.Result{RequeueAfter: r.Options.ProgressInterval}, nil
	case jobFailed:
		msg, _, err := jobFailure(ctx, r.Options.reader(r.Client), job, failure)
		if err != nil {
			return ctrl.Result{}, err
		}
		conditions.MarkStalled(&ev, ReasonEvaluationFailed, fmt.Sprintf("Job %s failed: %s", job.Name, truncate(msg, 1024)))
		return ctrl.Result{}, nil
	}
	ok, _, err := podResults(ctx, r.Client, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	msg, found := ok["0"]
	if !found {
		// The pod cache can lag behind the Job's: retry with backoff rather than stall.
		return ctrl.Result{}, fmt.Errorf("job %s succeeded but its pod's result is not visible yet", job.Name)
	}
	var result plan.EvaluateResult
	if err := json.Unmarshal([]byte(msg), &result); err != nil {
		conditions.MarkStalled(&ev, ReasonEvaluationFailed, fmt.Sprintf("Job %s returned an unreadable result: %v", job.Name, err))
		return ctrl.Result{}, nil
	}
	ApplyResult(&ev.Status, result)
	ev.Status.Revision = revName
	ev.Status.CompletionTime = job.Status.CompletionTime.DeepCopy()
	if ev.Status.CompletionTime == nil {
		ev.Status.CompletionTime = ptr.To(metav1.Now())
	}
	conditions.MarkReady(&ev, ReasonEvaluated, fmt.Sprintf("revision %s: recall@10 %s over %d queries", revName, recallAt10(&ev.Status), result.Queries))
	recordRun(&ev, job.Name, rev)
	// The figures stand whatever happens to the per-query results; a failure to read them
	// is retried (ResultsStored Unknown) and ends in a condition, never in a partial set.
	err = r.storeResults(ctx, &ev, job, result.Results)
	observeEvaluation(&ev, idx.Name) // after QualityDropped is decided
	return ctrl.Result{}, err
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
	if c := meta.FindStatusCondition(ev.Status.Conditions, ConditionQualityDropped); c != nil {
		metrics.SetQualityDropped(ev.Namespace, ev.Name, index, c.Status == metav1.ConditionTrue)
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
}

// interval is the status form of measure's interval in m (nil when the worker sent none).
func interval(m plan.MetricsAtK, measure string) *ragopsv1alpha1.ConfidenceInterval {
	iv, ok := m.Intervals[measure]
	if !ok {
		return nil
	}
	return &ragopsv1alpha1.ConfidenceInterval{Lower: Round(iv.Lo), Upper: Round(iv.Hi), StdErr: Round(iv.StdErr)}
}

// evaluationJobName is unique per (generation, revision, ragops.dev/retry value, scheduled
// time) so a new revision, spec, retry or schedule time runs anew.
func evaluationJobName(ev *ragopsv1alpha1.Evaluation, rev string) string {
	key := fmt.Sprintf("%d/%s", ev.Generation, rev)
	if retry := ev.Annotations[AnnotationRetry]; retry != "" {
		key += "/" + retry
	}
	if t := ev.Status.LastScheduleTime; t != nil && ev.Spec.Schedule != "" {
		key += "/scheduled/" + t.UTC().Format(time.RFC3339)
	}
	sum := sha256.Sum256([]byte(key))
	return fmt.Sprintf("%s-%s", objectName(ev.Name, 50), hex.EncodeToString(sum[:])[:8])
}

func (r *EvaluationReconciler) workload(ev *ragopsv1alpha1.Evaluation, idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) *workload {
	p := ev.Spec.EvaluationParameters
	w := &workload{owner: ev, name: evaluationJobName(ev, rev.Name), deadline: r.Options.JobDeadline, component: evaluationComponentName, revision: rev.Name,
		args: []string{"evaluate"}, template: p.Template, image: r.Options.WorkerImage, shards: 1}
	ds := plan.Source{HTTP: p.Dataset.HTTP}
	ds.Dir = sourceMounts(w, "dataset", plan.DatasetDir, p.Dataset.PVC, p.Dataset.ConfigMap)
	headerMounts(w, p.Dataset.HTTP)
	model, embedder := queryModel(idx, rev)
	var modelDir string
	if p.Mode != ragopsv1alpha1.ModeBM25 {
		modelDir = modelMounts(w, "model", plan.ModelDir, model, w.image)
	}
	if ref := idx.Spec.Weaviate.APIKeySecretRef; ref != nil {
		w.env = append(w.env, secretEnv(plan.EnvWeaviateAPIKey, *ref))
	}
	weaviateCAMounts(w, idx.Spec.Weaviate)
	ks := []int{10}
	for _, k := range p.K {
		if !slices.Contains(ks, int(k)) {
			ks = append(ks, int(k))
		}
	}
	slices.Sort(ks)
	pl := plan.Evaluate{Version: plan.Version,
		Namespace: ev.Namespace, Evaluation: ev.Name, UID: string(ev.UID), Revision: rev.Name, Collection: rev.Collection,
		Dataset: ds, Split: p.Dataset.Split, Mode: p.Mode, K: ks, MaxQueries: int(p.MaxQueries), ModelDir: modelDir,
		Embedder: embedder,
		Weaviate: plan.Weaviate{URL: idx.Spec.Weaviate.URL, GRPCAddress: idx.Spec.Weaviate.GRPCAddress,
			Consistency: readConsistency(idx)},
	}
	if pl.Split == "" {
		pl.Split = "test"
	}
	if p.Mode == ragopsv1alpha1.ModeHybrid {
		pl.Alpha, pl.Fusion = defaultHybridAlpha, ragopsv1alpha1.FusionRelativeScore
		if h := p.Hybrid; h != nil {
			if h.Alpha != nil {
				pl.Alpha = *h.Alpha
			}
			if h.Fusion != "" {
				pl.Fusion = h.Fusion
			}
		}
	}
	if rr := p.Rerank; rr != nil {
		pl.Rerank = &plan.Rerank{ModelDir: modelMounts(w, "rerank-model", plan.RerankModelDir, rr.Model, w.image), TopN: int(max(rr.TopN, 1))}
	}
	w.plan = pl
	return w
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
			func(x, y ragopsv1alpha1.RevisionStatus) bool { return x.Name == y.Name && x.Phase == y.Phase })
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ragopsv1alpha1.Evaluation{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&batchv1.Job{}).
		Watches(&ragopsv1alpha1.Index{}, byIndex, builder.WithPredicates(indexChanged)).
		Named("evaluation").
		Complete(r)
}
