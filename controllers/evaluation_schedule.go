package controllers

// Quality over time: scheduled re-runs of an Evaluation (CronJob semantics: one run at a
// time unless spec.concurrencyPolicy is Replace), its run history, and the QualityDropped
// condition when a run is worse than its pinned baseline run by more than spec.alert.maxDrop.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
)

// ConditionQualityDropped, with spec.alert, says whether the last run is worse than the
// baseline run (status.baseline) by more than spec.alert.maxDrop.
const ConditionQualityDropped = "QualityDropped"

// Reasons of the QualityDropped condition and of a bad schedule.
const (
	// ReasonQualityDropped: the upper bound of the paired interval of recall@10 (run −
	// baseline) is below −spec.alert.maxDrop.
	ReasonQualityDropped = "QualityDropped"
	// ReasonQualityHeld: the last run is not shown to be worse than the baseline by more
	// than maxDrop.
	ReasonQualityHeld = "QualityHeld"
	// ReasonBaselinePinned: the last run became the baseline later runs are compared with
	// (the first on its revision, under its measurement, on its queries).
	ReasonBaselinePinned = "BaselinePinned"
	// ReasonNotCompared: the last run could not be compared with the baseline (its
	// per-query results are not stored, or hold no recall@10 column).
	ReasonNotCompared = "NotCompared"
	// ReasonInvalidSchedule: spec.schedule does not parse, or its slots come less than
	// minScheduleInterval apart.
	ReasonInvalidSchedule = "InvalidSchedule"
)

// driftMetric is the per-query results column the drift check compares; spec.alert.maxDrop
// is in its units.
const driftMetric = "recall@10"

// defaultHistoryLimit is the number of runs status.history keeps without spec.historyLimit.
const defaultHistoryLimit = 10

// minScheduleInterval is the least time between two slots of spec.schedule (the CRD refuses
// a shorter @every; a five-field schedule cannot be shorter).
const minScheduleInterval = time.Minute

// parseSchedule parses spec.schedule as cron.ParseStandard does (five fields or a descriptor
// such as @daily or @every 30m). Errors: it does not parse, or it is an @every interval
// below minScheduleInterval (admitted before the CRD refused it).
func parseSchedule(s string) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, err
	}
	if d, ok := sched.(cron.ConstantDelaySchedule); ok && d.Delay < minScheduleInterval {
		return nil, fmt.Errorf("slots %s apart, want at least %s", d.Delay, minScheduleInterval)
	}
	return sched, nil
}

// checkSchedule stalls an Evaluation whose spec.schedule is no cron expression or too
// frequent.
func checkSchedule(_ context.Context, st *evaluationState) (reconcile.Result, error) {
	if s := st.ev.Spec.Schedule; s != "" {
		if _, err := parseSchedule(s); err != nil {
			return reconcile.Stalled(ReasonInvalidSchedule, fmt.Sprintf("spec.schedule: %q: %v", s, err)), nil
		}
	}
	return reconcile.Proceed, nil
}

// scheduleSlot returns the latest time of schedule at or before now that is after the
// last scheduled run (or the Evaluation's creation) — nil when none came since — and the
// next time after it. Errors: those of parseSchedule.
func scheduleSlot(ev *ragopsv1alpha1.Evaluation, now time.Time) (slot *time.Time, next time.Time, err error) {
	sched, err := parseSchedule(ev.Spec.Schedule)
	if err != nil {
		return nil, time.Time{}, err
	}
	from := ev.CreationTimestamp.UTC()
	if ev.Status.LastScheduleTime != nil {
		from = ev.Status.LastScheduleTime.UTC()
	}
	t := sched.Next(from)
	if t.IsZero() || t.After(now) {
		return nil, t, nil
	}
	// Missed slots (a stopped manager, a run that outlasted them) are one run: the latest.
	for range 100000 {
		n := sched.Next(t)
		if n.IsZero() || n.After(now) {
			break
		}
		t = n
	}
	return &t, sched.Next(t), nil
}

// scheduleRun applies spec.schedule: a schedule time passed since the last run starts a new
// one (its Job is named by that time), unless a run is in progress and
// spec.concurrencyPolicy is Forbid (the default): then the slot waits for it, and the latest
// slot passed starts the next run once it has ended (a CronJob's Forbid). Every reconcile
// from here comes back at the next slot.
func (r *EvaluationReconciler) scheduleRun(ctx context.Context, st *evaluationState) (reconcile.Result, error) {
	ev := st.ev
	if ev.Spec.Schedule == "" {
		return reconcile.Proceed, nil
	}
	slot, next, err := scheduleSlot(ev, time.Now())
	if err != nil {
		return reconcile.Stop, err // parsed by checkSchedule
	}
	if slot != nil && ev.Spec.ConcurrencyPolicy != ragopsv1alpha1.ConcurrencyReplace {
		running, err := r.runInProgress(ctx, ev)
		if err != nil {
			return reconcile.Stop, err
		}
		if running != "" {
			st.slotWaiting = fmt.Sprintf("the schedule's slot %s waits for it to end (spec.concurrencyPolicy Forbid)", slot.UTC().Format(time.RFC3339))
			// Its end wakes this Evaluation (an owned Job); its collection does not: look again soon.
			return reconcile.ProceedFor(r.Options.ProgressInterval), nil
		}
	}
	if slot != nil {
		ev.Status.LastScheduleTime, st.newSlot = ptr.To(metav1.NewTime(*slot)), true
	}
	if next.IsZero() {
		return reconcile.Proceed, nil
	}
	return reconcile.ProceedFor(max(time.Until(next)+time.Second, time.Second)), nil
}

// runInProgress names the Evaluation's Job that is still running, or that succeeded and
// whose result is still being collected (not in status.history yet, unless collecting it
// stalled; or its per-query results still being read); "" when there is none.
func (r *EvaluationReconciler) runInProgress(ctx context.Context, ev *ragopsv1alpha1.Evaluation) (string, error) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(ev.Namespace), client.MatchingFields{jobOwnerKey: "Evaluation/" + ev.Name}); err != nil {
		return "", err
	}
	last := ""
	if n := len(ev.Status.History); n > 0 {
		last = ev.Status.History[n-1].Job
	}
	stalled := meta.IsStatusConditionTrue(ev.Status.Conditions, ragopsv1alpha1.ConditionStalled)
	for _, j := range jobs.Items {
		if !j.DeletionTimestamp.IsZero() {
			continue
		}
		switch state, _ := workload.StateOf(&j); {
		case state == workload.Running,
			state == workload.Succeeded && j.Name != last && !stalled,
			state == workload.Succeeded && j.Name == last && resultsPending(ev):
			return j.Name, nil
		}
	}
	return "", nil
}

// recordRun puts the run of job (just applied to status) at the end of status.history,
// replacing an entry of the same Job, and keeps the last spec.historyLimit.
func recordRun(ev *ragopsv1alpha1.Evaluation, job string, rev *ragopsv1alpha1.RevisionStatus) {
	run := ragopsv1alpha1.EvaluationRun{Job: job, Revision: rev.Name, CorpusRevision: ev.Status.CorpusRevision, Queries: ev.Status.Queries,
		RecallAt10: ev.Status.RecallAt10, CompletionTime: *ev.Status.CompletionTime}
	if i := slices.IndexFunc(ev.Status.Metrics, func(m ragopsv1alpha1.MetricsAtK) bool { return m.K == 10 }); i >= 0 {
		run.RecallInterval = ev.Status.Metrics[i].RecallInterval
	}
	if workload.EvaluationRun(ev) != "" { // the slot that seeded the run's bootstrap (plan.Evaluate.Run)
		run.ScheduleTime = ev.Status.LastScheduleTime.DeepCopy()
	}
	h := ev.Status.History
	if n := len(h); n > 0 && h[n-1].Job == job {
		h[n-1] = run
	} else {
		h = append(h, run)
	}
	limit := defaultHistoryLimit
	if ev.Spec.HistoryLimit != nil {
		limit = int(*ev.Spec.HistoryLimit)
	}
	ev.Status.History = slices.Clone(h[max(0, len(h)-limit):])
}

// markQuality decides QualityDropped in res (spec.alert only; removed without it).
func markQuality(ev *ragopsv1alpha1.Evaluation, res *reconcile.Result, status metav1.ConditionStatus, reason, msg string) {
	if ev.Spec.Alert == nil {
		*res = res.Remove(ConditionQualityDropped)
		return
	}
	*res = res.Set(ConditionQualityDropped, status, reason, truncate(msg, 1024))
}

// checkAlert removes what no longer applies: without spec.alert the QualityDropped condition
// and the baseline (status.baseline and its ConfigMap); after a change of the measurement
// (status.measurement) the QualityDropped condition, until the next run decides it again.
func (r *EvaluationReconciler) checkAlert(ctx context.Context, st *evaluationState) (reconcile.Result, error) {
	ev := st.ev
	if ev.Spec.Alert == nil {
		if ev.Status.Baseline != nil {
			if err := r.deleteResults(ctx, ev, baselineConfigMapName(ev)); err != nil {
				return reconcile.Stop, err
			}
			ev.Status.Baseline = nil
		}
		return reconcile.Proceed.Remove(ConditionQualityDropped), nil
	}
	if m := ev.Status.Measurement; m != "" && m != workload.EvaluationMeasurement(ev) {
		return reconcile.Proceed.Remove(ConditionQualityDropped), nil
	}
	return reconcile.Proceed, nil
}

// observeQuality publishes QualityDropped as ragops_evaluation_quality_dropped, labelled with
// the Index spec.indexRef names, and removes the series when the condition is gone (spec.alert
// removed, the measurement changed), so that an alert on it stops.
func observeQuality(ev *ragopsv1alpha1.Evaluation) {
	c := meta.FindStatusCondition(ev.Status.Conditions, ConditionQualityDropped)
	if c == nil || ev.Spec.Alert == nil {
		metrics.ForgetQualityDropped(ev.Namespace, ev.Name)
		return
	}
	metrics.SetQualityDropped(ev.Namespace, ev.Name, ev.Spec.IndexRef.Name, c.Status == metav1.ConditionTrue)
}

// baselineConfigMapName names the ConfigMap holding the baseline run's per-query results.
func baselineConfigMapName(ev *ragopsv1alpha1.Evaluation) string {
	return workload.ObjectName(ev.Name, 240) + "-baseline"
}

// runName names a run in QualityDropped's messages.
func runName(r ragopsv1alpha1.EvaluationRun) string {
	return fmt.Sprintf("run %s (revision %s)", r.Job, r.Revision)
}

// compareWithBaseline, with spec.alert, decides QualityDropped in res for the run just
// recorded (the last of status.history), whose per-query results are cur (encoded as blob,
// SHA-256 sha): it compares them with the baseline run's (status.baseline) by
// stats.DriftTest on recall@10 at 95% (True when the interval's upper bound of run −
// baseline is below −maxDrop). When there is no baseline, or it measured another revision,
// under another measurement or on other queries, or its results are gone, the run becomes
// the baseline (BaselinePinned). Errors are transient API errors (the caller retries).
func (r *EvaluationReconciler) compareWithBaseline(ctx context.Context, ev *ragopsv1alpha1.Evaluation, res *reconcile.Result, cur *results.Set, blob []byte, sha string) error {
	if ev.Spec.Alert == nil || len(ev.Status.History) == 0 {
		markQuality(ev, res, "", "", "")
		return nil
	}
	run := ev.Status.History[len(ev.Status.History)-1]
	measurement := workload.EvaluationMeasurement(ev)
	b := ev.Status.Baseline
	var why string
	switch {
	case b == nil:
		why = "the first run compared"
	case b.Job == run.Job:
		why = "the baseline's own run"
	case b.Revision != run.Revision:
		why = fmt.Sprintf("the baseline %s measured another revision", runName(b.EvaluationRun))
	case b.Measurement != measurement:
		why = fmt.Sprintf("the spec changed what is measured since the baseline %s", runName(b.EvaluationRun))
	}
	var base *results.Set
	if why == "" {
		var err error
		if base, why, err = r.readBaseline(ctx, ev, b); err != nil {
			return err
		}
		if why == "" && base.Fingerprint != cur.Fingerprint {
			why = fmt.Sprintf("the baseline %s scored other queries", runName(b.EvaluationRun))
		}
	}
	if why != "" {
		return r.pinBaseline(ctx, ev, res, run, measurement, blob, sha, len(cur.Queries), why)
	}
	notCompared := func(msg string) error {
		markQuality(ev, res, metav1.ConditionFalse, ReasonNotCompared, fmt.Sprintf("%s not compared with the baseline %s: %s", runName(run), runName(b.EvaluationRun), msg))
		return nil
	}
	ids, c, err := cur.Column(driftMetric)
	if err != nil {
		return notCompared(err.Error())
	}
	bids, bv, err := base.Column(driftMetric)
	if err != nil {
		return notCompared(err.Error())
	}
	if !slices.Equal(ids, bids) {
		return notCompared("the two runs' query IDs differ")
	}
	d, err := stats.DriftTest(c, bv, ev.Spec.Alert.MaxDrop, stats.Options{Seed: stats.Seed(sha, b.Results.SHA256, driftMetric)})
	if err != nil {
		return notCompared(err.Error())
	}
	msg := fmt.Sprintf("%s against the baseline %s, paired over %d queries: %s", runName(run), runName(b.EvaluationRun), len(c), d.Message(driftMetric))
	if d.Dropped {
		markQuality(ev, res, metav1.ConditionTrue, ReasonQualityDropped, msg)
		return nil
	}
	markQuality(ev, res, metav1.ConditionFalse, ReasonQualityHeld, msg)
	return nil
}

// readBaseline reads the baseline run's per-query results from its ConfigMap; why is not
// empty when they are not there (gone, replaced, unreadable). Errors are transient reads.
func (r *EvaluationReconciler) readBaseline(ctx context.Context, ev *ragopsv1alpha1.Evaluation, b *ragopsv1alpha1.DriftBaseline) (set *results.Set, why string, err error) {
	var cm corev1.ConfigMap
	if err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: b.Results.ConfigMap}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("the results of the baseline %s are gone (ConfigMap %s)", runName(b.EvaluationRun), b.Results.ConfigMap), nil
		}
		return nil, "", err
	}
	if !metav1.IsControlledBy(&cm, ev) || cm.Annotations[AnnotationResultsSHA256] != b.Results.SHA256 {
		return nil, fmt.Sprintf("ConfigMap %s does not hold the results of the baseline %s", b.Results.ConfigMap, runName(b.EvaluationRun)), nil
	}
	set, err = results.Decode(cm.BinaryData[results.ConfigMapKey])
	if err != nil {
		return nil, fmt.Sprintf("ConfigMap %s: %v", b.Results.ConfigMap, err), nil
	}
	return set, "", nil
}

// pinBaseline makes run the baseline: its per-query results (blob) go into the baseline
// ConfigMap and status.baseline names it; QualityDropped is False, BaselinePinned, saying
// why. Errors are transient writes.
func (r *EvaluationReconciler) pinBaseline(ctx context.Context, ev *ragopsv1alpha1.Evaluation, res *reconcile.Result, run ragopsv1alpha1.EvaluationRun, measurement string, blob []byte, sha string, queries int, why string) error {
	name := baselineConfigMapName(ev)
	want := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ev.Namespace, Name: name,
		Labels:      workload.ObjectLabels("baseline", ev.Name, run.Revision),
		Annotations: map[string]string{AnnotationResultsSHA256: sha}},
		BinaryData: map[string][]byte{results.ConfigMapKey: blob}}
	if err := controllerutil.SetControllerReference(ev, &want, r.Scheme()); err != nil {
		return err
	}
	var cm corev1.ConfigMap
	err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: ev.Namespace, Name: name}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, &want); err != nil {
			return err
		}
	case err != nil:
		return err
	case !metav1.IsControlledBy(&cm, ev):
		markQuality(ev, res, metav1.ConditionFalse, ReasonNotCompared, fmt.Sprintf("ConfigMap %s exists and is not this Evaluation's: no baseline can be kept (delete or rename it)", name))
		return nil
	default:
		base := cm.DeepCopy()
		cm.Labels, cm.Annotations = want.Labels, want.Annotations
		cm.Data, cm.BinaryData = nil, want.BinaryData
		if err := r.Patch(ctx, &cm, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
	}
	ev.Status.Baseline = &ragopsv1alpha1.DriftBaseline{EvaluationRun: run, Measurement: measurement,
		Results: ragopsv1alpha1.PerQueryResults{ConfigMap: name, Queries: int32(queries), Bytes: int64(len(blob)), SHA256: sha}}
	markQuality(ev, res, metav1.ConditionFalse, ReasonBaselinePinned, fmt.Sprintf("%s is the baseline later runs are compared with (%s)", runName(run), why))
	return nil
}
