package controllers_test

// Tests for the review findings of issue 16 (defects 2-9 and 12); each fails on the code
// before its fix.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
)

// ownedJobs lists the Jobs of a namespace that obj controls.
func ownedJobs(t *testing.T, ns string, obj metav1.Object) []batchv1.Job {
	t.Helper()
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range jobs.Items {
		if metav1.IsControlledBy(&j, obj) {
			out = append(out, j)
		}
	}
	return out
}

func patchAnnotation(t *testing.T, obj client.Object, key, value string) {
	t.Helper()
	base := obj.DeepCopyObject().(client.Object)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
	if err := env.Client.Patch(context.Background(), obj, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// Defect 2: two Indexes whose names share their first 40 characters (same spec, so the
// same revision hash) each get their own build Job; neither adopts the other's.
func TestIndexesSharingANamePrefixGetTheirOwnJobs(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	prefix := strings.Repeat("raadsbesluiten-gemeente-", 2) // 48 characters
	var idxs []*ragopsv1alpha1.Index
	for _, suffix := range []string{"noord", "zuid"} {
		_, idx := strategyAndIndex(ns)
		idx.Name = prefix + suffix
		if err := env.Client.Create(ctx, idx); err != nil {
			t.Fatal(err)
		}
		idxs = append(idxs, idx)
	}
	names := map[string]bool{}
	for _, idx := range idxs {
		var jobs []batchv1.Job
		eventually(t, 30*time.Second, "build Job of "+idx.Name, func() (bool, error) {
			jobs = ownedJobs(t, ns, getIndex(t, ns, idx.Name))
			return len(jobs) == 1, nil
		})
		names[jobs[0].Name] = true
		if !strings.HasSuffix(jobs[0].Name, "-build") {
			t.Errorf("Job %s is not a build Job", jobs[0].Name)
		}
	}
	if len(names) != 2 {
		t.Fatalf("the two Indexes share build Job %v", names)
	}
	// The build Job is created before the reconcile that created it writes status.revision.
	var a, b *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "status.revision of both Indexes", func() (bool, error) {
		a, b = getIndex(t, ns, idxs[0].Name), getIndex(t, ns, idxs[1].Name)
		return a.Status.Revision != "" && b.Status.Revision != "", nil
	})
	if a.Status.Revision != b.Status.Revision {
		t.Fatalf("revisions differ (%s, %s): the test needs the same revision hash", a.Status.Revision, b.Status.Revision)
	}
}

// Defect 2: a Job with the build Job's name that the Index does not control is never used;
// the Index stalls with a condition naming it.
func TestForeignJobWithTheBuildJobsNameIsNotAdopted(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	// A suspended Corpus has no revision yet, so nothing is built while the test learns the
	// revision.
	docs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: map[string]string{"a.md": "# A\nTekst."}}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{Suspend: true, ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
	strategy, idx := strategyAndIndex(ns)
	for _, o := range []client.Object{docs, corpus, strategy, idx} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The Index computes its revision but cannot build: the Corpus has no revision yet.
	var rev string
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		rev = getIndex(t, ns, idx.Name).Status.Revision
		return rev != "", nil
	})
	name := fmt.Sprintf("besluiten-%s-build", rev)
	foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "x", Image: "busybox"}}}}}}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	base := corpus.DeepCopy()
	corpus.Spec.Suspend = false
	if err := env.Client.Patch(ctx, corpus, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	var ix *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "Stalled JobConflict", func() (bool, error) {
		ix = getIndex(t, ns, "besluiten")
		c := condition(ix, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonJobConflict && strings.Contains(c.Message, name), nil
	})
	if jobs := ownedJobs(t, ns, ix); len(jobs) != 0 {
		t.Fatalf("the Index created or adopted %d Jobs", len(jobs))
	}
}

// Defect 3: the scan-requested annotation starts one scan per new value, not a scan after
// every finished scan.
func TestScanRequestStartsOneScan(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{Git: &ragopsv1alpha1.GitSource{URL: "https://git.example.org/besluiten.git", Ref: "main"}}}
	if err := env.Client.Create(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	finishScan := func(n int) {
		t.Helper()
		var jobs []batchv1.Job
		eventually(t, 30*time.Second, fmt.Sprintf("scan Job %d", n), func() (bool, error) {
			jobs = ownedJobs(t, ns, corpus)
			return len(jobs) == n, nil
		})
		// Scan results are ordered by completion time (whole seconds): finish in a later second.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		for i := range jobs {
			if s := jobs[i].Status; s.Succeeded == 0 && s.Failed == 0 {
				res, _ := json.Marshal(plan.ScanResult{Documents: int64(n), Bytes: 10, Revision: fmt.Sprintf("rev%d", n)})
				finishJob(t, &jobs[i], 0, string(res))
			}
		}
		eventually(t, 30*time.Second, "scan recorded", func() (bool, error) {
			var c ragopsv1alpha1.Corpus
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c)
			return err == nil && c.Status.Revision == fmt.Sprintf("rev%d", n), err
		})
	}
	finishScan(1)
	patchAnnotation(t, corpus, "ragops.dev/scan-requested", "1")
	finishScan(2)
	// The annotation is still set: no third scan may start when the Corpus reconciles again
	// (here for an unrelated annotation).
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), corpus); err != nil {
		t.Fatal(err)
	}
	patchAnnotation(t, corpus, "example.org/touched", "1")
	time.Sleep(3 * time.Second)
	if jobs := ownedJobs(t, ns, corpus); len(jobs) != 2 {
		t.Fatalf("%d scan Jobs after one scan request, want 2", len(jobs))
	}
	var c ragopsv1alpha1.Corpus
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c); err != nil || c.Status.LastHandledScanRequest != "1" {
		t.Fatalf("lastHandledScanRequest %q (err %v), want 1", c.Status.LastHandledScanRequest, err)
	}
	// A new value scans once more.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), corpus); err != nil {
		t.Fatal(err)
	}
	patchAnnotation(t, corpus, "ragops.dev/scan-requested", "2")
	finishScan(3)
}

// createSuspendedGitCorpus creates the Corpus "besluiten" in ns from a Git source, suspended
// so that the manager's own reconciler leaves it to the test's reconciler.
func createSuspendedGitCorpus(t *testing.T, ns string) *ragopsv1alpha1.Corpus {
	t.Helper()
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{Suspend: true, Git: &ragopsv1alpha1.GitSource{URL: "https://git.example.org/besluiten.git", Ref: "main"}}}
	if err := env.Client.Create(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	return corpus
}

// Defect 7: reconciles that do not see each other's scan Job (a stale cache), a second apart,
// start one scan Job, not one each.
func TestStaleCacheReconcilesStartOneScanJob(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	corpus := createSuspendedGitCorpus(t, ns)
	// A client whose Job list is stale (empty), whose status writes an earlier reconcile never
	// sees, and that sees the Corpus unsuspended (the manager's reconciler leaves it alone).
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	stale := interceptor.NewClient(direct, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*batchv1.JobList); ok {
				return nil
			}
			return c.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if co, ok := obj.(*ragopsv1alpha1.Corpus); ok {
				co.Spec.Suspend = false
			}
			return nil
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return nil
		},
	})
	base := time.Now()
	for i := range 3 {
		rec := &controllers.CorpusReconciler{Client: stale, Options: controllers.Options{WorkerImage: "ragops:test", ProgressInterval: time.Second},
			Now: func() time.Time { return base.Add(time.Duration(i) * time.Second) }}
		if _, err := rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(corpus)}); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	if jobs := ownedJobs(t, ns, corpus); len(jobs) != 1 {
		names := []string{}
		for _, j := range jobs {
			names = append(names, j.Name)
		}
		t.Fatalf("three reconciles on a stale cache started %d scan Jobs %v, want 1", len(jobs), names)
	}
}

// corpusView is what one reconcile of a lagging cache sees: the Corpus's status as of some
// earlier write, and its Jobs less those the cache has not seen yet.
type corpusView struct {
	status ragopsv1alpha1.CorpusStatus
	unseen map[string]bool
}

// laggingCorpusClient reads the API server but shows each Corpus with view().status and
// unsuspended (the manager's reconciler leaves a suspended Corpus alone), lists the Jobs a
// Corpus controls (as the manager's field index does) less view().unseen, and hands status
// writes to patched instead of the API server (the next view decides what the reconcile saw
// of them).
func laggingCorpusClient(t *testing.T, view func() corpusView, patched func(*ragopsv1alpha1.Corpus)) client.Client {
	t.Helper()
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(direct, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			jobs, ok := list.(*batchv1.JobList)
			if !ok {
				return c.List(ctx, list, opts...)
			}
			var o client.ListOptions
			o.ApplyOptions(opts)
			owner := o.FieldSelector.String() // .metadata.controller=Corpus/<name>
			var all batchv1.JobList
			if err := c.List(ctx, &all, client.InNamespace(o.Namespace)); err != nil {
				return err
			}
			jobs.Items = nil
			for _, j := range all.Items {
				ref := metav1.GetControllerOf(&j)
				if ref != nil && strings.HasSuffix(owner, "="+ref.Kind+"/"+ref.Name) && !view().unseen[j.Name] {
					jobs.Items = append(jobs.Items, j)
				}
			}
			return nil
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if co, ok := obj.(*ragopsv1alpha1.Corpus); ok {
				co.Spec.Suspend = false
				st := view().status
				co.Status = *st.DeepCopy()
			}
			return nil
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			if co, ok := obj.(*ragopsv1alpha1.Corpus); ok && patched != nil {
				patched(co.DeepCopy())
			}
			return nil
		},
	})
}

// Defect 7, the race left after the first fix: when a spec change and the status write that
// records the previous scan cross, one reconcile of the new generation reads the status
// before that write (no last sync) and the next one after it (last sync T1), neither seeing
// the other's scan Job. Both must name the same scan Job: one is created, the other adopts
// it. Then a schedule slot whose interval has passed starts one scan, however many
// reconciles of that slot do not see each other's Job.
func TestStaleViewsOfANewGenerationStartOneScanJob(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	corpus := createSuspendedGitCorpus(t, ns)
	var view corpusView
	now := time.Now()
	rec := &controllers.CorpusReconciler{Client: laggingCorpusClient(t, func() corpusView { return view }, nil),
		Options: controllers.Options{WorkerImage: "ragops:test", ProgressInterval: time.Second},
		Now:     func() time.Time { return now }}
	reconcile := func(v corpusView) {
		t.Helper()
		view = v
		if _, err := rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(corpus)}); err != nil {
			t.Fatal(err)
		}
	}
	jobsOf := func(gen int64) []batchv1.Job {
		var out []batchv1.Job
		for _, j := range ownedJobs(t, ns, corpus) {
			if j.Labels[controllers.LabelRevision] == strconv.FormatInt(gen, 10) {
				out = append(out, j)
			}
		}
		return out
	}
	names := func(jobs []batchv1.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.Name)
		}
		return out
	}
	result, _ := json.Marshal(plan.ScanResult{Documents: 3, Bytes: 30, Revision: "rev1"})

	// Generation 1 scans once (J1) and its result is recorded at T1.
	reconcile(corpusView{})
	j1 := jobsOf(1)
	if len(j1) != 1 {
		t.Fatalf("generation 1: scan Jobs %v, want 1", names(j1))
	}
	finishJob(t, &j1[0], 0, string(result))
	t1 := *j1[0].Status.CompletionTime
	recorded := ragopsv1alpha1.CorpusStatus{ObservedGeneration: 1, LastSyncTime: &t1, Revision: "rev1", Documents: 3, Bytes: 30}

	// The spec changes (generation 2) while that record is being written.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), corpus); err != nil {
		t.Fatal(err)
	}
	corpus.Spec.Include = []string{"*.md"}
	if err := env.Client.Update(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	reconcile(corpusView{status: ragopsv1alpha1.CorpusStatus{ObservedGeneration: 1}})
	first := jobsOf(2)
	unseen := map[string]bool{}
	for _, j := range first {
		unseen[j.Name] = true
	}
	reconcile(corpusView{status: recorded, unseen: unseen})
	j2 := jobsOf(2)
	if len(j2) != 1 {
		t.Fatalf("generation 2: two reconciles on lagging caches started scan Jobs %v, want 1", names(j2))
	}

	// J2 finishes and is recorded at T2; an interval (1h) later, reconciles of one schedule
	// slot start one scan, the second not seeing the first's Job.
	finishJob(t, &j2[0], 0, string(result))
	t2 := *j2[0].Status.CompletionTime
	synced := ragopsv1alpha1.CorpusStatus{ObservedGeneration: 2, LastSyncTime: &t2, Revision: "rev1", Documents: 3, Bytes: 30}
	slot := t2.Add(time.Hour).UnixNano()/int64(time.Hour) + 1
	now = time.Unix(0, slot*int64(time.Hour)).Add(10 * time.Minute)
	reconcile(corpusView{status: synced})
	scheduled := jobsOf(2)
	if len(scheduled) != 2 {
		t.Fatalf("an interval after the last sync: scan Jobs %v, want 2", names(scheduled))
	}
	unseen = map[string]bool{}
	for _, j := range scheduled {
		if j.Name != j2[0].Name {
			unseen[j.Name] = true
		}
	}
	now = now.Add(time.Minute)
	reconcile(corpusView{status: synced, unseen: unseen})
	if jobs := jobsOf(2); len(jobs) != 2 {
		t.Fatalf("two reconciles of one schedule slot started scan Jobs %v, want 2 in all", names(jobs))
	}
}

// A scan that finishes in the same second as the scan last recorded (completion times have
// whole seconds) is recorded too: the new generation's result is not left unread.
func TestScanFinishedInTheSecondOfTheLastSyncIsRecorded(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	corpus := createSuspendedGitCorpus(t, ns)
	var view corpusView
	var written *ragopsv1alpha1.Corpus
	rec := &controllers.CorpusReconciler{Client: laggingCorpusClient(t, func() corpusView { return view }, func(c *ragopsv1alpha1.Corpus) { written = c }),
		Options: controllers.Options{WorkerImage: "ragops:test", ProgressInterval: time.Second}}
	reconcile := func(v corpusView) {
		t.Helper()
		view, written = v, nil
		if _, err := rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(corpus)}); err != nil {
			t.Fatal(err)
		}
	}
	scanJob := func(gen string) *batchv1.Job {
		t.Helper()
		for _, j := range ownedJobs(t, ns, corpus) {
			if j.Labels[controllers.LabelRevision] == gen {
				return &j
			}
		}
		t.Fatalf("no scan Job of generation %s", gen)
		return nil
	}
	reconcile(corpusView{})
	j1 := scanJob("1")
	r1, _ := json.Marshal(plan.ScanResult{Documents: 3, Bytes: 30, Revision: "rev1"})
	finishJob(t, j1, 0, string(r1))
	t1 := *j1.Status.CompletionTime
	recorded := ragopsv1alpha1.CorpusStatus{ObservedGeneration: 1, LastSyncTime: &t1, Revision: "rev1", Documents: 3, Bytes: 30}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), corpus); err != nil {
		t.Fatal(err)
	}
	corpus.Spec.Include = []string{"*.md"}
	if err := env.Client.Update(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	reconcile(corpusView{status: recorded})
	j2 := scanJob("2")
	r2, _ := json.Marshal(plan.ScanResult{Documents: 4, Bytes: 40, Revision: "rev2"})
	// Finished in the second of the last sync (set in the first status write: the apiserver
	// refuses a later change of completionTime, and a second between the two finishes made
	// this test fail under load).
	finishJobAt(t, j2, t1, 0, string(r2))
	reconcile(corpusView{status: recorded})
	if written == nil {
		t.Fatal("no status written after the generation 2 scan finished in the second of the last sync")
	}
	if written.Status.Revision != "rev2" || written.Status.Documents != 4 {
		t.Fatalf("status after the generation 2 scan finished in the second of the last sync: revision %q, %d documents; want rev2 with 4",
			written.Status.Revision, written.Status.Documents)
	}
	// Read again with the result recorded: nothing changes, and no further scan starts.
	again := written.Status
	reconcile(corpusView{status: again})
	if written != nil && (written.Status.Revision != "rev2" || written.Status.Documents != 4) {
		t.Errorf("second read of the same scan wrote %+v", written.Status)
	}
	if jobs := ownedJobs(t, ns, corpus); len(jobs) != 2 {
		t.Errorf("%d scan Jobs, want 2", len(jobs))
	}
}

// syncFixture builds and activates revision r1 and changes the corpus; it returns the sync
// Job the controller starts.
func syncFixture(t *testing.T, ns string) (r1 string, sync *batchv1.Job, corpusRev string) {
	t.Helper()
	fixture(t, ns, nil)
	r1, _ = buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r1)
	before := idx.Status.Revisions[0].CorpusRevision
	ctx := context.Background()
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["b.md"] = "# Motivering\nHet voorstel is gewijzigd."
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	var corpus ragopsv1alpha1.Corpus
	eventually(t, 20*time.Second, "new corpus revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &corpus)
		return err == nil && corpus.Status.Revision != before, err
	})
	return r1, waitSyncJob(t, ns, idx, ""), corpus.Status.Revision
}

// waitSyncJob waits for a running sync Job other than `not`.
func waitSyncJob(t *testing.T, ns string, idx *ragopsv1alpha1.Index, not string) *batchv1.Job {
	t.Helper()
	var sync *batchv1.Job
	eventually(t, 30*time.Second, "sync Job", func() (bool, error) {
		for _, j := range ownedJobs(t, ns, idx) {
			if strings.Contains(j.Name, "-sync-") && j.Name != not && j.Status.Succeeded == 0 && j.Status.Failed == 0 {
				sync = &j
				return true, nil
			}
		}
		return false, nil
	})
	return sync
}

// Defect 4: a failed sync Job is retried with the retry annotation, under a new Job.
func TestFailedSyncIsRetriedWithTheRetryAnnotation(t *testing.T) {
	ns := newNamespace(t)
	r1, sync, corpusRev := syncFixture(t, ns)
	finishJob(t, sync, 1, `{"error":"weaviate: connection refused"}`)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "Stalled after the failed sync", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionStalled)
		return c != nil && strings.Contains(c.Message, "connection refused") && strings.Contains(c.Message, controllers.AnnotationRetry), nil
	})
	patchAnnotation(t, idx, controllers.AnnotationRetry, "1")
	again := waitSyncJob(t, ns, idx, sync.Name)
	res, _ := json.Marshal(plan.BuildResult{Documents: 1, Unchanged: 2, Chunks: 2})
	finishJob(t, again, 0, string(res))
	eventually(t, 30*time.Second, "sync recorded", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return idx.Status.Revisions[0].CorpusRevision == corpusRev && c != nil && c.Status == metav1.ConditionTrue &&
			condition(idx, ragopsv1alpha1.ConditionStalled) == nil, nil
	})
	if idx.Status.ActiveRevision != r1 || idx.Status.LastHandledRetry != "1" {
		t.Errorf("active %s lastHandledRetry %q, want %s and 1", idx.Status.ActiveRevision, idx.Status.LastHandledRetry, r1)
	}
}

// Defect 4: the sync Job is deleted only after the Index status that records its result is
// persisted (etcd revisions order the two writes).
func TestSyncJobIsDeletedAfterItsResultIsPersisted(t *testing.T) {
	ns := newNamespace(t)
	_, sync, corpusRev := syncFixture(t, ns)
	ctx := context.Background()
	wc := watchClient()
	var idxs ragopsv1alpha1.IndexList
	if err := wc.List(ctx, &idxs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	iw, err := wc.Watch(ctx, &ragopsv1alpha1.IndexList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: idxs.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer iw.Stop()
	var jobs batchv1.JobList
	if err := wc.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	jw, err := wc.Watch(ctx, &batchv1.JobList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: jobs.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer jw.Stop()
	res, _ := json.Marshal(plan.BuildResult{Documents: 1, Unchanged: 2, Chunks: 2})
	finishJob(t, sync, 0, string(res))

	rv := func(o metav1.Object) int64 { n, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64); return n }
	var recorded, deleted int64
	timeout := time.After(30 * time.Second)
	for recorded == 0 || deleted == 0 {
		select {
		case ev := <-iw.ResultChan():
			if ix, ok := ev.Object.(*ragopsv1alpha1.Index); ok && recorded == 0 && len(ix.Status.Revisions) > 0 && ix.Status.Revisions[0].CorpusRevision == corpusRev {
				recorded = rv(ix)
			}
		case ev := <-jw.ResultChan():
			if j, ok := ev.Object.(*batchv1.Job); ok && j.Name == sync.Name && deleted == 0 && (ev.Type == watch.Deleted || !j.DeletionTimestamp.IsZero()) {
				deleted = rv(j)
			}
		case <-timeout:
			t.Fatalf("status recorded at %d, Job deleted at %d: one did not happen", recorded, deleted)
		}
	}
	if deleted < recorded {
		t.Fatalf("sync Job deleted (resourceVersion %d) before its result was persisted (%d)", deleted, recorded)
	}
}

// Defect 5: a spec change during a build stops the superseded revision's Job, and its
// collection is not pruned while that Job's pods may still write.
func TestSpecChangeDuringBuildStopsTheSupersededJob(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Rollout.RevisionHistoryLimit = 1 })
	ctx := context.Background()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 1, nil
	})
	r1 := idx.Status.Revisions[0]
	job1 := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", r1.Name))
	// The first build's pod has started writing.
	s := directStore(t)
	c1 := r1.Collection
	writeChunks(t, c1, r1.Name)
	setStrategySize(t, ns, 128)
	eventually(t, 30*time.Second, "superseded revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		for _, r := range idx.Status.Revisions {
			if r.Name == r1.Name {
				return r.Phase == ragopsv1alpha1.RevisionSuperseded, nil
			}
		}
		return false, nil
	})
	var j batchv1.Job
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(job1), &j)
	if err == nil && j.DeletionTimestamp.IsZero() {
		t.Fatalf("the superseded build Job %s still runs", job1.Name)
	}
	// envtest has no garbage collector: the Job waits for its pods (foreground deletion).
	// Meanwhile its collection must stay.
	r2, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r2)
	if ok, err := s.CollectionExists(ctx, c1); err != nil || !ok {
		t.Fatalf("collection %s of the stopped build was deleted while its Job was still going (err %v)", c1, err)
	}
	// The pods are gone: play the garbage collector.
	if err == nil {
		j.Finalizers = nil
		if err := env.Client.Update(ctx, &j); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "superseded collection pruned", func() (bool, error) {
		ok, err := s.CollectionExists(ctx, c1)
		return err == nil && !ok, err
	})
}

// Defect 6: a reconciler's Weaviate call makes one attempt (the work queue backs off), not
// the workers' several retries.
func TestReconcilerStoreMakesOneAttempt(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/schema/") { // the collection lookup itself
			calls.Add(1)
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	store, err := controllers.NewWeaviateStore(ragopsv1alpha1.WeaviateSpec{URL: srv.URL, GRPCAddress: "127.0.0.1:1"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CollectionExists(context.Background(), "Rag_x"); err == nil {
		t.Fatal("CollectionExists against a 503 succeeded")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d schema requests for one call, want 1", n)
	}
	cfg, _ := controllers.StoreConfig(ragopsv1alpha1.WeaviateSpec{URL: srv.URL}, "", nil)
	if cfg.Timeout != controllers.StoreTimeout || controllers.StoreTimeout > 15*time.Second {
		t.Fatalf("request timeout %s, want %s (at most 15 s)", cfg.Timeout, controllers.StoreTimeout)
	}
}

// Defect 8: the manager caches only the Pods ragops made.
func TestManagerCachesOnlyRagopsPods(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	mk := func(name string, labels map[string]string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("theirs", map[string]string{"app": "web"})
	mk("ours", map[string]string{controllers.LabelManagedBy: "ragops"})
	var pods corev1.PodList
	eventually(t, 30*time.Second, "our pod in the cache", func() (bool, error) {
		err := k8s.List(ctx, &pods, client.InNamespace(ns))
		for _, p := range pods.Items {
			if p.Name == "ours" {
				return true, nil
			}
		}
		return false, err
	})
	// Events arrive in order: "theirs" was created first and would be cached by now.
	for _, p := range pods.Items {
		if p.Name == "theirs" {
			t.Fatalf("the manager caches pods ragops did not make")
		}
	}
}

// Defect 9: shard results read while the Job ran survive the pods being deleted before the
// Job completes; results never read are counted in Weaviate instead of erroring forever.
func TestShardResultsSurviveTheirPods(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 1, nil
	})
	rev := idx.Status.Revisions[0]
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev.Name))
	writeChunks(t, rev.Collection, rev.Name)
	// The shard's pod succeeds; the Job has not completed yet.
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 6, Tokens: 600, Seconds: 2})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-0", Labels: podLabels(job),
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}}, Spec: *job.Spec.Template.Spec.DeepCopy()}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: "ragops:test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: string(res), Reason: "Completed"}}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "result saved in the plan ConfigMap", func() (bool, error) {
		var cm corev1.ConfigMap
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &cm)
		return err == nil && cm.Data["result-0.json"] == string(res), err
	})
	// The pod is garbage-collected before the Job completes.
	if err := env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	completeJob(t, job, time.Now())
	idx = waitActive(t, ns, "besluiten", rev.Name)
	if r := idx.Status.Revisions[0]; r.Chunks != 6 || r.Tokens != 600 || r.Documents != 3 {
		t.Fatalf("revision figures %d documents %d chunks %d tokens, want 3, 6, 600 from the saved result", r.Documents, r.Chunks, r.Tokens)
	}

	// A second revision whose pod went before it was ever read: after the grace the build
	// cannot be verified, so it runs again (resuming) and its second attempt's result counts.
	setStrategySize(t, ns, 100)
	eventually(t, 30*time.Second, "second revision building", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 2, nil
	})
	rev2 := idx.Status.Revisions[0]
	job2 := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev2.Name))
	writeChunks(t, rev2.Collection, rev2.Name)
	completeJob(t, job2, time.Now().Add(-time.Hour))
	buildAttempt(t, ns, "besluiten", 2)
	idx = waitActive(t, ns, "besluiten", rev2.Name)
	if r := idx.Status.Revisions[0]; r.Chunks != 6 || r.Documents != 3 || r.Tokens != 600 || r.Attempt != 2 || r.IncompleteRuns != 1 {
		t.Fatalf("revision %d documents %d chunks %d tokens, attempt %d, %d incomplete runs: want 3, 6, 600 from the re-run, attempt 2, 1",
			r.Documents, r.Chunks, r.Tokens, r.Attempt, r.IncompleteRuns)
	}
	eventually(t, 30*time.Second, "Warning Event ShardResultsLost", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "ShardResultsLost" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, rev2.Name) {
				return true, nil
			}
		}
		return false, nil
	})
}

// Defect 12: an Index whose deletion is held by a user's finalizer no longer claims to serve
// once its alias and collections are gone.
func TestDeletedIndexHeldByAnotherFinalizerIsNotReady(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r1)
	ctx := context.Background()
	base := idx.DeepCopy()
	idx.Finalizers = append(idx.Finalizers, "example.org/hold")
	if err := env.Client.Patch(ctx, idx, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "cleanup done and status says so", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return len(idx.Finalizers) == 1 && c != nil && c.Status == metav1.ConditionFalse && c.Reason == controllers.ReasonDeleting, nil
	})
	if c := condition(idx, ragopsv1alpha1.ConditionReady); strings.Contains(c.Message, "serves") || idx.Status.Chunks != 0 || idx.Status.ActiveRevision != "" {
		t.Errorf("deleted Index: Ready %q chunks %d active %q", c.Message, idx.Status.Chunks, idx.Status.ActiveRevision)
	}
	if ok, err := directStore(t).CollectionExists(ctx, c1); err != nil || ok {
		t.Errorf("collection %s exists=%v (err %v) after cleanup", c1, ok, err)
	}
	if target := aliasTarget(t, ns, "besluiten"); target != "" {
		t.Errorf("alias still points at %s after cleanup", target)
	}
	base = idx.DeepCopy()
	idx.Finalizers = nil
	if err := env.Client.Patch(ctx, idx, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// completeJob marks an Indexed Job of one shard Complete at `at`, without creating pods.
func completeJob(t *testing.T, job *batchv1.Job, at time.Time) {
	t.Helper()
	start, done := metav1.NewTime(at.Add(-time.Minute)), metav1.NewTime(at)
	job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &done, Succeeded: 1, CompletedIndexes: "0",
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: done, Reason: "CompletionsReached"},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: done, Reason: "CompletionsReached"},
		}}
	if err := env.Client.Status().Update(context.Background(), job); err != nil {
		t.Fatalf("complete Job %s: %v", job.Name, err)
	}
}

// Fault: an Index deleted while its build Job runs. The Job is stopped first and the
// collection outlives the Job's pods (a starting pod would recreate it); then the alias,
// the collection, the plan ConfigMap and the Index go, nothing orphaned.
func TestIndexDeletedWhileItsBuildRuns(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	ctx := context.Background()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 1, nil
	})
	rev := idx.Status.Revisions[0]
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev.Name))
	writeChunks(t, rev.Collection, rev.Name) // the pod is writing
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "build Job stopped", func() (bool, error) {
		var j batchv1.Job
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j)
		return err == nil && !j.DeletionTimestamp.IsZero(), err
	})
	s := directStore(t)
	// The controller stops the Jobs first and then writes the condition.
	eventually(t, 30*time.Second, "DeletionBlocked naming Job "+job.Name, func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionDeletionBlocked)
		return c != nil && strings.Contains(c.Message, job.Name), nil
	})
	if ok, err := s.CollectionExists(ctx, rev.Collection); err != nil || !ok {
		t.Fatalf("collection %s deleted while the Job's pods may still run (err %v)", rev.Collection, err)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &cm); err == nil {
		t.Errorf("plan ConfigMap %s survives its stopped Job", cm.Name)
	}
	// The garbage collector removes the Job once its pods are gone (envtest has none).
	var j batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err != nil {
		t.Fatal(err)
	}
	j.Finalizers = nil
	if err := env.Client.Update(ctx, &j); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Index gone", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	if ok, err := s.CollectionExists(ctx, rev.Collection); err != nil || ok {
		t.Errorf("collection %s exists=%v (err %v) after the Index's deletion", rev.Collection, ok, err)
	}
	if got := aliasTarget(t, ns, "besluiten"); got != "" {
		t.Errorf("alias points at %q after the Index's deletion", got)
	}
	if jobs := ownedJobs(t, ns, idx); len(jobs) != 0 {
		t.Errorf("%d Jobs of the deleted Index remain", len(jobs))
	}
}
