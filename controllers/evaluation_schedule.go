package controllers

// Quality over time: scheduled re-runs of an Evaluation, its run history, and the
// QualityDropped condition when a run is significantly worse than the previous one.

import (
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/evaluator/results"
	"github.com/ragops/ragops/evaluator/stats"
	"github.com/ragops/ragops/internal/reconcile"
)

// ConditionQualityDropped, with spec.alert, says whether the last run was significantly
// worse than the previous one on the same queries.
const ConditionQualityDropped = "QualityDropped"

// Reasons of the QualityDropped condition and of a bad schedule.
const (
	// ReasonQualityDropped: recall@10 fell by more than spec.alert.maxDrop, p < 0.05.
	ReasonQualityDropped = "QualityDropped"
	// ReasonQualityHeld: the last run is not significantly worse beyond maxDrop.
	ReasonQualityHeld = "QualityHeld"
	// ReasonNoBaseline: there is no previous run on the same queries to compare with.
	ReasonNoBaseline = "NoBaseline"
	// ReasonInvalidSchedule: spec.schedule does not parse.
	ReasonInvalidSchedule = "InvalidSchedule"
)

// defaultHistoryLimit is the number of runs status.history keeps without spec.historyLimit.
const defaultHistoryLimit = 10

// qualityAlpha is the significance level of QualityDropped's paired test.
const qualityAlpha = 0.05

// scheduleSlot returns the latest time of schedule at or before now that is after the
// last scheduled run (or the Evaluation's creation) — nil when none came since — and the
// next time after it. Errors: a schedule that does not parse (cron.ParseStandard: five
// fields or a descriptor such as @daily).
func scheduleSlot(ev *ragopsv1alpha1.Evaluation, now time.Time) (slot *time.Time, next time.Time, err error) {
	sched, err := cron.ParseStandard(ev.Spec.Schedule)
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
	// Missed slots (a stopped manager) are one run: the latest.
	for range 100000 {
		n := sched.Next(t)
		if n.IsZero() || n.After(now) {
			break
		}
		t = n
	}
	return &t, sched.Next(t), nil
}

// recordRun puts the run of job (just applied to status) at the end of status.history,
// replacing an entry of the same Job, and keeps the last spec.historyLimit.
func recordRun(ev *ragopsv1alpha1.Evaluation, job string, rev *ragopsv1alpha1.RevisionStatus) {
	run := ragopsv1alpha1.EvaluationRun{Job: job, Revision: rev.Name, CorpusRevision: ev.Status.CorpusRevision, Queries: ev.Status.Queries,
		RecallAt10: ev.Status.RecallAt10, CompletionTime: *ev.Status.CompletionTime}
	if i := slices.IndexFunc(ev.Status.Metrics, func(m ragopsv1alpha1.MetricsAtK) bool { return m.K == 10 }); i >= 0 {
		run.RecallInterval = ev.Status.Metrics[i].RecallInterval
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

// compareRuns, with spec.alert, decides QualityDropped in res from the paired comparison of the new
// run's per-query recall@10 (cur, with SHA-256 curSHA of its encoding) with the previous
// run's (prev, nil when there is none): True when the two-sided paired randomization test
// gives p < 0.05 and the mean drop is beyond spec.alert.maxDrop; the message names both
// runs (their Jobs from status.history, which already holds the new run).
func compareRuns(ev *ragopsv1alpha1.Evaluation, res *reconcile.Result, prev, cur *results.Set, curSHA, prevSHA string) {
	if ev.Spec.Alert == nil {
		markQuality(ev, res, "", "", "")
		return
	}
	set := func(status metav1.ConditionStatus, reason, msg string) { markQuality(ev, res, status, reason, msg) }
	// The runs' names: the last two entries of status.history (the new run is the last).
	var curRun, prevRun ragopsv1alpha1.EvaluationRun
	if n := len(ev.Status.History); n > 0 {
		curRun = ev.Status.History[n-1]
		if n > 1 {
			prevRun = ev.Status.History[n-2]
		}
	}
	name := func(r ragopsv1alpha1.EvaluationRun) string {
		return fmt.Sprintf("run %s (revision %s)", r.Job, r.Revision)
	}
	if prev == nil {
		set(metav1.ConditionFalse, ReasonNoBaseline, "no previous run's per-query results to compare with")
		return
	}
	if prev.Fingerprint != cur.Fingerprint {
		set(metav1.ConditionFalse, ReasonNoBaseline, fmt.Sprintf("%s scored other queries than the previous %s: not compared", name(curRun), name(prevRun)))
		return
	}
	ids, c, err1 := cur.Column(gateMetric)
	pids, p, err2 := prev.Column(gateMetric)
	if err1 != nil || err2 != nil || !slices.Equal(ids, pids) {
		set(metav1.ConditionFalse, ReasonNoBaseline, fmt.Sprintf("%s and the previous %s have no common %s column: not compared", name(curRun), name(prevRun), gateMetric))
		return
	}
	cmp, err := stats.Compare(c, p, stats.Options{Seed: stats.Seed(curSHA, prevSHA, gateMetric)})
	if err != nil {
		set(metav1.ConditionFalse, ReasonNoBaseline, fmt.Sprintf("comparison failed: %v", err))
		return
	}
	msg := fmt.Sprintf("%s against the previous %s over %d queries: %s %s, p = %.4f (paired randomization test), allowed drop %s",
		name(curRun), name(prevRun), len(c), gateMetric, stats.FormatDiff(cmp.Diff), cmp.P, stats.Signed(-ev.Spec.Alert.MaxDrop, 3))
	if cmp.P < qualityAlpha && cmp.Diff.Mean < -ev.Spec.Alert.MaxDrop {
		set(metav1.ConditionTrue, ReasonQualityDropped, msg+": quality dropped")
		return
	}
	set(metav1.ConditionFalse, ReasonQualityHeld, msg)
}
