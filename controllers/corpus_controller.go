package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ragops/ragops/access"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/internal/workload"
)

// Corpus condition reasons.
const (
	ReasonSynced            = "Synced"
	ReasonSyncing           = "Syncing"
	ReasonSourceNotFound    = "SourceNotFound"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonSecretKeyMissing  = "SecretKeyMissing"
	ReasonSourceUnreadable  = "SourceUnreadable"
	ReasonSuspended         = "Suspended"
	scanJobsKept            = 2
	annotationScanRequested = "ragops.dev/scan-requested"
)

// ScanRetryBase is the wait before the first automatic retry of a failed scan; each further
// consecutive failure of the same generation doubles it, up to the Corpus's interval.
const ScanRetryBase = 30 * time.Second

// CorpusReconciler checks a Corpus's source and records its documents, bytes and content
// revision. ConfigMap sources are read directly; PVC, HTTP, S3 and Git sources are listed by
// a `ragops scan` Job (the only place that mounts or fetches them), so the manager needs no
// access to the data.
type CorpusReconciler struct {
	client.Client
	Events  events.EventRecorder
	Options Options
	// Now returns the current time (tests replace it).
	Now func() time.Time

	written ownWrites
}

// +kubebuilder:rbac:groups=ragops.dev,resources=corpora,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ragops.dev,resources=corpora/finalizers,verbs=update
// +kubebuilder:rbac:groups=ragops.dev,resources=corpora/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func (r *CorpusReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile syncs one Corpus.
func (r *CorpusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	ctx, endSpan := tracing.Reconcile(ctx, "Corpus", req.Namespace, req.Name)
	defer func() { endSpan(retErr) }()
	var c ragopsv1alpha1.Corpus
	if err := r.Get(ctx, req.NamespacedName, &c); err != nil {
		r.written.forget(req.NamespacedName)
		if apierrors.IsNotFound(err) {
			metrics.ForgetConditions(req.Namespace, "Corpus", req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&c) {
		return ctrl.Result{RequeueAfter: cacheCatchUp}, nil
	}
	defer r.written.record(&c, c.ResourceVersion)
	if !c.DeletionTimestamp.IsZero() {
		// Scan Jobs are owned and garbage-collected; the extraction cache is dropped here.
		return ctrl.Result{}, r.reconcileDelete(ctx, &c)
	}
	if !controllerutil.ContainsFinalizer(&c, Finalizer) {
		// Patched on a copy: the reconcile goes on with the object as it read it (the patch
		// reply would replace it with the server's newest view mid-reconcile), plus the
		// finalizer and the resourceVersion the patch made.
		withFinalizer := c.DeepCopy()
		controllerutil.AddFinalizer(withFinalizer, Finalizer)
		if err := r.Patch(ctx, withFinalizer, client.MergeFrom(c.DeepCopy())); err != nil {
			return ctrl.Result{}, err
		}
		c.Finalizers, c.ResourceVersion = withFinalizer.Finalizers, withFinalizer.ResourceVersion
	}
	patcher := reconcile.NewStatusPatcher(&c, needsAPerson)
	defer func() {
		c.Status.ObservedGeneration = c.Generation
		patcher.Done(ctx, r.Client, r.Events, &c, &res, &retErr)
	}()
	result, err := reconcile.Run(ctx, &c, describeCorpus, r.checkSource, r.syncCorpus)
	res = reconcile.Summarize(&c, result)
	if err != nil {
		return ctrl.Result{}, err // the work queue backs off
	}
	return res, nil
}

// describeCorpus writes the source into status; a suspended Corpus stops here, Ready with
// its last sync.
func describeCorpus(_ context.Context, c *ragopsv1alpha1.Corpus) (reconcile.Result, error) {
	c.Status.Source = describeSource(c.Spec)
	if c.Spec.Suspend {
		return reconcile.Stop.With(reconcile.OutcomeReady, ReasonSuspended, "resyncs are suspended; the last sync stays in effect"), nil
	}
	return reconcile.Proceed, nil
}

// checkSource stalls a Corpus whose PVC or Secrets are missing (see checkReferences).
func (r *CorpusReconciler) checkSource(ctx context.Context, c *ragopsv1alpha1.Corpus) (reconcile.Result, error) {
	if msg, reason := r.checkReferences(ctx, c); msg != "" {
		return reconcile.Stalled(reason, msg), nil
	}
	return reconcile.Proceed, nil
}

// syncCorpus lists a ConfigMap corpus itself and any other source with a scan Job.
func (r *CorpusReconciler) syncCorpus(ctx context.Context, c *ragopsv1alpha1.Corpus) (reconcile.Result, error) {
	if c.Spec.ConfigMap != nil {
		return r.syncConfigMap(ctx, c)
	}
	return r.syncWithJob(ctx, c)
}

// checkReferences verifies the Secrets and PVC a source names; it returns a message and a
// reason when one is missing.
func (r *CorpusReconciler) checkReferences(ctx context.Context, c *ragopsv1alpha1.Corpus) (string, string) {
	s := c.Spec
	if s.PVC != nil {
		var pvc corev1.PersistentVolumeClaim
		if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: s.PVC.ClaimName}, &pvc); err != nil {
			return fmt.Sprintf("spec.pvc.claimName: PersistentVolumeClaim %q: %v", s.PVC.ClaimName, err), ReasonSourceNotFound
		}
	}
	if s.S3 != nil && s.S3.SecretRef != nil {
		if msg, reason := r.checkSecretKeys(ctx, c.Namespace, "spec.s3.secretRef", s.S3.SecretRef.Name, "accesskey", "secretkey"); msg != "" {
			return msg, reason
		}
	}
	if s.Git != nil && s.Git.SecretRef != nil {
		if msg, reason := r.checkSecretKeys(ctx, c.Namespace, "spec.git.secretRef", s.Git.SecretRef.Name); msg != "" {
			return msg, reason
		}
	}
	if s.HTTP != nil && s.HTTP.HeadersSecretRef != nil {
		if msg, reason := r.checkSecretKeys(ctx, c.Namespace, "spec.http.headersSecretRef", s.HTTP.HeadersSecretRef.Name); msg != "" {
			return msg, reason
		}
	}
	return "", ""
}

func (r *CorpusReconciler) checkSecretKeys(ctx context.Context, ns, field, name string, keys ...string) (string, string) {
	return checkSecretKeys(ctx, r.Client, ns, field, name, keys...)
}

// checkSecretKeys returns a message naming field when the Secret or one of its keys is missing.
func checkSecretKeys(ctx context.Context, c client.Client, ns, field, name string, keys ...string) (string, string) {
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("%s: Secret %q not found", field, name), ReasonSecretNotFound
		}
		return fmt.Sprintf("%s: Secret %q: %v", field, name, err), ReasonSecretNotFound
	}
	for _, k := range keys {
		if _, ok := sec.Data[k]; !ok {
			return fmt.Sprintf("%s: Secret %q has no key %q", field, name, k), ReasonSecretKeyMissing
		}
	}
	return "", ""
}

// syncConfigMap reads a ConfigMap corpus: each data or binaryData key is a document.
func (r *CorpusReconciler) syncConfigMap(ctx context.Context, c *ragopsv1alpha1.Corpus) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.ConfigMap.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Stalled(ReasonSourceNotFound, fmt.Sprintf("spec.configMap.name: ConfigMap %q not found", c.Spec.ConfigMap.Name)), nil
		}
		return reconcile.Stop, err
	}
	files := map[string][]byte{}
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	// Listed as a scan Job lists the same files on a volume (one formula for every source):
	// the format decides whether a .jsonl is one BEIR record per line.
	listed, skips, err := corpus.List(ctx, files, plan.Source{Format: c.Spec.Format, Include: c.Spec.Include, Exclude: c.Spec.Exclude, MaxDocumentBytes: c.Spec.MaxDocumentBytes, Metadata: c.Spec.Metadata})
	if err != nil {
		return reconcile.Stalled(ReasonSourceUnreadable, fmt.Sprintf("ConfigMap %s: %v", cm.Name, err)), nil
	}
	var size int64
	for _, d := range listed {
		size += d.Size
	}
	var skipped map[string]int64
	for _, sk := range skips {
		if skipped == nil {
			skipped = map[string]int64{}
		}
		skipped[sk.Reason]++
	}
	docs := int64(len(listed))
	rev := access.Revision(corpus.WithMetadata(corpus.Revision(listed), c.Spec.Metadata), c.Spec.Access)
	if rev != c.Status.Revision || c.Status.LastSyncTime == nil {
		c.Status.LastSyncTime = &metav1.Time{Time: r.now().Truncate(time.Second)}
	}
	c.Status.Documents, c.Status.Bytes, c.Status.Revision, c.Status.Skipped = docs, size, rev, skipped
	return reconcile.Stop.With(reconcile.OutcomeReady, ReasonSynced, fmt.Sprintf("%d documents, revision %s", docs, rev)), nil
}

// syncWithJob runs a scan Job when a sync is due and records its result.
func (r *CorpusReconciler) syncWithJob(ctx context.Context, c *ragopsv1alpha1.Corpus) (reconcile.Result, error) {
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(c.Namespace), client.MatchingFields{jobOwnerKey: "Corpus/" + c.Name}); err != nil {
		return reconcile.Stop, err
	}
	sortScanJobs(jobs.Items)
	var current *batchv1.Job
	for i := range jobs.Items {
		if jobs.Items[i].Labels[workload.LabelRevision] == strconv.FormatInt(c.Generation, 10) {
			current = &jobs.Items[i]
			break
		}
	}
	interval := c.Spec.Interval.Duration
	if interval <= 0 {
		interval = time.Hour
	}
	request := c.Annotations[annotationScanRequested]
	requested := request != "" && request != c.Status.LastHandledScanRequest
	trigger := r.scanTrigger(c, current, request, requested, interval)
	due := trigger != ""
	cause := ""                   // why a scan starts after a failed one, for the condition message
	var recorded reconcile.Result // the outcome of a scan recorded by this reconcile
	if current != nil {
		state, failure := workload.StateOf(current)
		switch state {
		case workload.Running:
			return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonSyncing,
				fmt.Sprintf("scan Job %s is listing the source", current.Name)), nil
		case workload.Failed:
			msg, _, err := jobFailure(ctx, r.Options.reader(r.Client), current, failure)
			if err != nil {
				return reconcile.Stop, err
			}
			next, wait, note, err := r.afterFailedScan(ctx, c, current, jobs.Items, request, requested, interval)
			if err != nil {
				return reconcile.Stop, err
			}
			failed := fmt.Sprintf("scan Job %s failed: %s", current.Name, msg)
			if next == "" {
				r.pruneScanJobs(ctx, c, jobs.Items, interval)
				return reconcile.StopFor(max(wait, time.Second)).With(reconcile.OutcomeRetrying, ReasonSourceUnreadable, failed+"; "+note), nil
			}
			trigger, due, cause = next, true, " ("+note+" after "+failed+")"
		case workload.Succeeded:
			done, last := current.Status.CompletionTime, c.Status.LastSyncTime
			switch {
			case last == nil || (done != nil && done.After(last.Time)):
				res, ok, err := r.recordScan(ctx, c, current)
				if err != nil || !ok {
					return res, err
				}
				recorded, due = res, false
			case done != nil && done.Equal(last):
				// Completion times have whole seconds: a scan that finished in the second of
				// the last recorded one may not be recorded yet. Its result is read again
				// while its pod holds it (recording is idempotent).
				before := scanFigures(c)
				res, ok, err := r.recordScan(ctx, c, current)
				recorded = res
				if err == nil && ok && scanFigures(c) != before {
					due = false
				}
			}
		}
	}
	if !due {
		r.pruneScanJobs(ctx, c, jobs.Items, interval)
		next := interval
		if c.Status.LastSyncTime != nil {
			next = time.Until(c.Status.LastSyncTime.Add(interval))
		}
		return recorded.Merge(reconcile.StopFor(max(next, time.Second))), nil
	}
	w := workload.Scan(c, trigger, r.Options.workloadDefaults())
	if current != nil && w.Name == current.Name && strings.HasPrefix(trigger, "schedule/") {
		// This schedule slot's scan ran already (the clocks of the manager and of the
		// Job's completion disagree): the next slot starts the next one.
		return recorded.Merge(reconcile.StopFor(max(slotEnd(r.now(), interval).Sub(r.now()), time.Second))), nil
	}
	if _, err := ensureJob(ctx, r.Client, r.Options.reader(r.Client), w); err != nil {
		var conflict *JobConflictError
		if errors.As(err, &conflict) {
			return reconcile.Stalled(ReasonJobConflict, conflict.Error()), nil
		}
		return recorded.Merge(reconcile.Stop), err
	}
	if requested {
		c.Status.LastHandledScanRequest = request
	}
	return recorded.Merge(reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonSyncing,
		fmt.Sprintf("scan Job %s started%s", w.Name, cause))), nil
}

// scanFigure holds the status fields a recorded scan sets.
type scanFigure struct {
	documents, bytes int64
	revision, commit string
}

// scanFigures returns c's recorded scan figures.
func scanFigures(c *ragopsv1alpha1.Corpus) scanFigure {
	return scanFigure{c.Status.Documents, c.Status.Bytes, c.Status.Revision, c.Status.Commit}
}

// recordScan copies a succeeded scan Job's result into status: ok when it was read, with the
// outcome it calls for (Ready, or Ready=False for an unreadable result).
func (r *CorpusReconciler) recordScan(ctx context.Context, c *ragopsv1alpha1.Corpus, job *batchv1.Job) (reconcile.Result, bool, error) {
	ok, _, err := podResults(ctx, r.Client, job)
	if err != nil {
		return reconcile.Stop, false, err
	}
	msg, found := ok["0"]
	if !found {
		// The pod cache can lag behind the Job's: retry with backoff.
		return reconcile.Stop, false, fmt.Errorf("scan Job %s succeeded but its pod's result is not visible yet", job.Name)
	}
	var res plan.ScanResult
	if err := json.Unmarshal([]byte(msg), &res); err != nil {
		return reconcile.Stop.With(reconcile.OutcomeRetrying, ReasonSourceUnreadable, fmt.Sprintf("scan Job %s returned no result: %v", job.Name, err)), false, nil
	}
	// A change of the access rules is a new revision: the Indexes sync (regroup) their chunks.
	c.Status.Documents, c.Status.Bytes, c.Status.Revision, c.Status.Skipped = res.Documents, res.Bytes, access.Revision(res.Revision, c.Spec.Access), res.Skipped
	c.Status.Commit, c.Status.HTTP = res.Commit, res.HTTP
	t := metav1.Now()
	if job.Status.CompletionTime != nil {
		t = *job.Status.CompletionTime
	}
	c.Status.LastSyncTime = &t
	synced := fmt.Sprintf("%d documents, revision %s", res.Documents, res.Revision)
	if res.Commit != "" {
		synced += ", commit " + res.Commit
	}
	return reconcile.Stop.With(reconcile.OutcomeReady, ReasonSynced, synced), true, nil
}

// pruneScanJobs keeps the newest finished scan Jobs: scanJobsKept of them, or as many as the
// backoff of a run of failed scans counts (see failedStreak), at most the number after which
// the wait reaches interval.
func (r *CorpusReconciler) pruneScanJobs(ctx context.Context, c *ragopsv1alpha1.Corpus, jobs []batchv1.Job, interval time.Duration) {
	keep := max(scanJobsKept, min(failedStreak(c, jobs), backoffSteps(interval)))
	kept := 0
	for _, j := range jobs {
		if s, _ := workload.StateOf(&j); s == workload.Running {
			continue
		}
		kept++
		if kept > keep {
			_ = deleteJob(ctx, r.Client, c.Namespace, j.Name)
		}
	}
}

// sortScanJobs orders scan Jobs newest first: by creation time (whole seconds), then, in the
// same second, a Job still running before a finished one (a scan starts only once the one
// before it finished), a later finish first, and, finished in the same second too, a
// succeeded one first (its result is recorded rather than lost), then by name.
func sortScanJobs(jobs []batchv1.Job) {
	sort.SliceStable(jobs, func(i, j int) bool {
		a, b := &jobs[i], &jobs[j]
		if ca, cb := a.CreationTimestamp, b.CreationTimestamp; !ca.Equal(&cb) {
			return cb.Before(&ca)
		}
		fa, fb := finishedAt(a), finishedAt(b)
		switch {
		case fa.IsZero() != fb.IsZero():
			return fa.IsZero()
		case !fa.Equal(fb):
			return fa.After(fb)
		}
		if sa, sb := scanSucceeded(a), scanSucceeded(b); sa != sb {
			return sa
		}
		return a.Name > b.Name
	})
}

// finishedAt is when a Job completed or failed (its Complete or Failed condition); zero while
// it runs.
func finishedAt(job *batchv1.Job) time.Time {
	for _, cond := range job.Status.Conditions {
		if cond.Status == corev1.ConditionTrue && (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) {
			if cond.LastTransitionTime.IsZero() && job.Status.CompletionTime != nil {
				return job.Status.CompletionTime.Time
			}
			return cond.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func scanSucceeded(job *batchv1.Job) bool {
	s, _ := workload.StateOf(job)
	return s == workload.Succeeded
}

// failedStreak counts the scan Jobs of c's generation that failed in a row, newest first
// (jobs sorted by sortScanJobs), up to the newest one that succeeded or still runs.
func failedStreak(c *ragopsv1alpha1.Corpus, jobs []batchv1.Job) int {
	gen := strconv.FormatInt(c.Generation, 10)
	n := 0
	for i := range jobs {
		if jobs[i].Labels[workload.LabelRevision] != gen {
			continue
		}
		if s, _ := workload.StateOf(&jobs[i]); s != workload.Failed {
			break
		}
		n++
	}
	return n
}

// scanRetryDelay is the wait after the failure that ends a run of failures consecutive
// failed scans (failures >= 1): ScanRetryBase doubled failures-1 times, at most interval.
func scanRetryDelay(failures int, interval time.Duration) time.Duration {
	d := ScanRetryBase
	for i := 1; i < failures && d < interval; i++ {
		d *= 2
	}
	return min(d, interval)
}

// backoffSteps is the number of consecutive failures after which scanRetryDelay reaches
// interval (at least 1).
func backoffSteps(interval time.Duration) int {
	n := 1
	for scanRetryDelay(n, interval) < interval {
		n++
	}
	return n
}

// afterFailedScan decides what follows the failed scan Job current (the newest of c's
// generation): a new scan at once for a new ragops.dev/scan-requested value, or when a Secret
// or PVC the source names was created or changed since current was created (a fix); else an
// automatic retry once the backoff after the run of failures has passed (see
// scanRetryDelay). It returns the trigger of the scan to start (see scanTrigger), or "" and
// how long to wait; note says what happens next, for the condition message.
func (r *CorpusReconciler) afterFailedScan(ctx context.Context, c *ragopsv1alpha1.Corpus, current *batchv1.Job, jobs []batchv1.Job,
	request string, requested bool, interval time.Duration) (trigger string, wait time.Duration, note string, err error) {
	if requested {
		return "request/" + request, 0, "requested by " + annotationScanRequested + "=" + request, nil
	}
	changed, err := r.referenceChangedSince(ctx, c, current.CreationTimestamp.Time)
	if err != nil {
		return "", 0, "", err
	}
	if changed != "" {
		return "references/" + current.Name, 0, changed + " changed", nil
	}
	failures := failedStreak(c, jobs)
	delay := scanRetryDelay(failures, interval)
	failedAt := finishedAt(current)
	if failedAt.IsZero() {
		failedAt = current.CreationTimestamp.Time
	}
	if wait = failedAt.Add(delay).Sub(r.now()); wait <= 0 {
		return "retry/" + current.Name, 0, fmt.Sprintf("retry %d", failures), nil
	}
	return "", wait, fmt.Sprintf("retry %d in %s (%d failed in a row; the wait starts at %s and doubles up to the interval, %s), "+
		"at once on a new %s value or a change of the Secret or PVC the source names",
		failures, wait.Round(time.Second), failures, ScanRetryBase, interval, annotationScanRequested), nil
}

// referenceChangedSince names the first Secret or PVC the source of c names that was created
// or changed (per its managed fields' times) after since, both in whole seconds; "" when none
// was. A change in the second of since itself is not seen (the backoff retries anyway). A
// missing one is left to checkReferences.
func (r *CorpusReconciler) referenceChangedSince(ctx context.Context, c *ragopsv1alpha1.Corpus, since time.Time) (string, error) {
	type ref struct {
		what string
		obj  client.Object
	}
	var refs []ref
	s := c.Spec
	for _, sr := range []struct {
		field string
		sel   *ragopsv1alpha1.LocalObjectReference
	}{
		{"spec.s3.secretRef", s3SecretRef(s.S3)}, {"spec.git.secretRef", gitSecretRef(s.Git)}, {"spec.http.headersSecretRef", httpSecretRef(s.HTTP)},
	} {
		if sr.sel != nil {
			refs = append(refs, ref{fmt.Sprintf("%s Secret %q", sr.field, sr.sel.Name), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sr.sel.Name}}})
		}
	}
	if s.PVC != nil {
		refs = append(refs, ref{fmt.Sprintf("spec.pvc.claimName PersistentVolumeClaim %q", s.PVC.ClaimName),
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: s.PVC.ClaimName}}})
	}
	live := r.Options.reader(r.Client)
	for _, rf := range refs {
		err := live.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: rf.obj.GetName()}, rf.obj)
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return "", err
		}
		if lastChange(rf.obj).After(since) {
			return rf.what, nil
		}
	}
	return "", nil
}

// lastChange is when an object was created or its spec or data last written by any field
// manager (whole seconds). A write to the status subresource (a PVC's phase, a resize) is
// not a change of what the scan reads.
func lastChange(o client.Object) time.Time {
	t := o.GetCreationTimestamp().Time
	for _, mf := range o.GetManagedFields() {
		if mf.Subresource != "" {
			continue
		}
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

func s3SecretRef(s *ragopsv1alpha1.S3Source) *ragopsv1alpha1.LocalObjectReference {
	if s == nil {
		return nil
	}
	return s.SecretRef
}

func gitSecretRef(g *ragopsv1alpha1.GitSource) *ragopsv1alpha1.LocalObjectReference {
	if g == nil {
		return nil
	}
	return g.SecretRef
}

func httpSecretRef(h *ragopsv1alpha1.HTTPSource) *ragopsv1alpha1.LocalObjectReference {
	if h == nil {
		return nil
	}
	return h.HeadersSecretRef
}

// scanTrigger names what makes a scan of c due, or returns "" when none is. current is the
// newest scan Job of c's generation (nil when the cache holds none). In order:
//   - "generation": no scan of this generation was started (a new Corpus or a spec change);
//     a scan request made meanwhile is served by it;
//   - "request/<value>": the ragops.dev/scan-requested annotation has a value not yet handled;
//   - "schedule/<n>": interval passed since the last sync; n is the interval-long slot of the
//     clock (Unix time divided by interval) the scan starts in.
//
// After a failed scan Job F, afterFailedScan replaces the schedule with "references/<F>" (a
// Secret or PVC of the source changed since F was created) and "retry/<F>" (F's backoff
// passed): one scan per failed Job and cause.
//
// Views of c and of its Jobs that lag behind each other agree on the trigger, except across a
// slot boundary, so they name the same scan Job.
func (r *CorpusReconciler) scanTrigger(c *ragopsv1alpha1.Corpus, current *batchv1.Job, request string, requested bool, interval time.Duration) string {
	switch {
	case current == nil:
		return "generation"
	case requested:
		return "request/" + request
	case c.Status.LastSyncTime == nil || r.now().Sub(c.Status.LastSyncTime.Time) >= interval:
		return "schedule/" + strconv.FormatInt(r.now().UnixNano()/int64(interval), 10)
	}
	return ""
}

// slotEnd returns the end of the interval-long clock slot that holds t.
func slotEnd(t time.Time, interval time.Duration) time.Time {
	n := t.UnixNano() / int64(interval)
	return time.Unix(0, (n+1)*int64(interval))
}

func describeSource(s ragopsv1alpha1.CorpusSpec) string {
	switch {
	case s.S3 != nil:
		return "s3://" + s.S3.Bucket + "/" + s.S3.Prefix
	case s.PVC != nil:
		return "pvc:" + s.PVC.ClaimName + "/" + s.PVC.Path
	case s.ConfigMap != nil:
		return "configmap:" + s.ConfigMap.Name
	case s.HTTP != nil:
		return truncate(s.HTTP.URL, 80)
	case s.Git != nil:
		return truncate(s.Git.URL, 70) + "@" + s.Git.Ref
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// SetupWithManager watches Corpora, their scan Jobs, and the ConfigMaps, Secrets and PVCs
// they name.
func (r *CorpusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	bySource := enqueueReferrers(r.Client, func() client.ObjectList { return &ragopsv1alpha1.CorpusList{} }, corpusBySource)
	return ctrl.NewControllerManagedBy(mgr).
		For(&ragopsv1alpha1.Corpus{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&batchv1.Job{}).
		Watches(&corev1.ConfigMap{}, bySource, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, bySource, builder.OnlyMetadata).
		Watches(&corev1.PersistentVolumeClaim{}, bySource, builder.OnlyMetadata).
		Named("corpus").
		Complete(r)
}
