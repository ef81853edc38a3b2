package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
	"k8s.io/apimachinery/pkg/watch"
	"strconv"
)

// editDoc rewrites one document of fixture's ConfigMap corpus and returns the Corpus's new
// content revision once it is recorded.
func editDoc(t *testing.T, ns, key, text string) string {
	t.Helper()
	ctx := context.Background()
	var corpus ragopsv1alpha1.Corpus
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &corpus); err != nil {
		t.Fatal(err)
	}
	before := corpus.Status.Revision
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = text
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "new corpus revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &corpus)
		return err == nil && corpus.Status.Revision != before && corpus.Status.Revision != "", err
	})
	return corpus.Status.Revision
}

// syncJobsOf returns the sync Jobs of a revision, by name.
func syncJobsOf(t *testing.T, ns, rev string) map[string]batchv1.Job {
	t.Helper()
	out := map[string]batchv1.Job{}
	for _, j := range ownedJobs(t, ns, getIndex(t, ns, "besluiten")) {
		if strings.Contains(j.Name, "-"+rev+"-sync-") {
			out[j.Name] = j
		}
	}
	return out
}

// playGC removes a deleted Job's finalizers, as the garbage collector does once its pods are
// gone (envtest has none).
func playGC(t *testing.T, job batchv1.Job) {
	t.Helper()
	ctx := context.Background()
	var j batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&job), &j); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return
		}
		t.Fatal(err)
	}
	j.Finalizers = nil
	if err := env.Client.Update(ctx, &j); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

func revisionOf(t *testing.T, ns, name string) ragopsv1alpha1.RevisionStatus {
	t.Helper()
	for _, r := range getIndex(t, ns, "besluiten").Status.Revisions {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no revision %s", name)
	return ragopsv1alpha1.RevisionStatus{}
}

var syncResult, _ = json.Marshal(plan.BuildResult{Documents: 1, Unchanged: 2, Chunks: 2})

// Defect 2 and issue 51: one sync of a revision runs at a time, and a running sync is not
// stopped when the Corpus moves on (under frequent changes that restarted it forever): Y→Z
// while sync-Y runs leaves sync-Y running with nothing beside it; once it is done the
// revision records Y, and then a sync of Z runs. Z→W→Z while sync-W runs: the revision
// records W, not Z, and a fresh sync Job of Z runs (sync-W wrote over Z).
func TestRunningSyncFinishesBeforeTheNextStarts(t *testing.T) {
	ns := newNamespace(t)
	r1, syncY, y := syncFixture(t, ns)
	idx := getIndex(t, ns, "besluiten")

	z := editDoc(t, ns, "c.md", "# Stemverhouding\n20 voor, 9 tegen.")
	eventually(t, 30*time.Second, "the Index saying that Z follows sync-Y", func() (bool, error) {
		c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionReconciling)
		return c != nil && strings.Contains(c.Message, "corpus revision "+z+" follows"), nil
	})
	for name, j := range syncJobsOf(t, ns, r1) {
		if name == syncY.Name && !j.DeletionTimestamp.IsZero() {
			t.Fatalf("sync-Y %s was stopped when the Corpus moved on", name)
		}
		if name != syncY.Name {
			t.Fatalf("sync Job %s started beside the running %s", name, syncY.Name)
		}
	}
	syncZ := finishThenNext(t, ns, idx, r1, syncY, y, z)
	finishJob(t, syncZ, 0, string(syncResult))
	eventually(t, 30*time.Second, "corpus revision Z recorded", func() (bool, error) {
		return revisionOf(t, ns, r1).CorpusRevision == z, nil
	})

	w := editDoc(t, ns, "a.md", "# Beslispunt\nDe raad wijst het voorstel af.")
	syncW := waitSyncJob(t, ns, idx, syncZ.Name)
	back := editDoc(t, ns, "a.md", "# Beslispunt\nDe raad besluit het voorstel aan te nemen.")
	finishJob(t, syncW, 0, string(syncResult))
	eventually(t, 30*time.Second, "W recorded", func() (bool, error) {
		return revisionOf(t, ns, r1).CorpusRevision == w, nil
	})
	// The finished sync-Z was deleted once Z was recorded: play the garbage collector, which
	// removes its pods and then the Job (a fresh sync of Z may reuse its name).
	if err := env.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns),
		client.MatchingLabels{"batch.kubernetes.io/job-name": syncZ.Name}); err != nil {
		t.Fatal(err)
	}
	playGC(t, *syncZ)
	var fresh *batchv1.Job
	eventually(t, 30*time.Second, "a fresh sync of "+back, func() (bool, error) {
		for _, j := range syncJobsOf(t, ns, r1) {
			if running(&j) && j.UID != syncZ.UID && j.UID != syncW.UID {
				fresh = &j
				return true, nil
			}
		}
		return false, nil
	})
	if fresh.Annotations["ragops.dev/corpus-revision"] != back {
		t.Fatalf("fresh sync %s annotations %v, want corpus revision %s", fresh.Name, fresh.Annotations, back)
	}
	if got := revisionOf(t, ns, r1).CorpusRevision; got == back && back != w {
		t.Fatalf("revision %s records %s before its fresh sync ran", r1, got)
	}
	finishJob(t, fresh, 0, string(syncResult))
	eventually(t, 30*time.Second, "corpus revision recorded after the fresh sync", func() (bool, error) {
		return revisionOf(t, ns, r1).CorpusRevision == back, nil
	})
}

// Defect 3: while a new revision built, the revision behind the alias served a frozen
// corpus, and at cut-over the new revision served documents deleted since its build began.
func TestActiveRevisionSyncsDuringARolloutAndTheCandidateCatchesUp(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 96)
	var r2 string
	eventually(t, 30*time.Second, "a second revision building", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		r2 = idx.Status.Revision
		return r2 != r1 && len(idx.Status.Revisions) == 2, nil
	})
	build2 := waitJob(t, ns, "besluiten-"+r2+"-build")

	// The corpus changes while r2 builds: r1, which serves, syncs with its own strategy.
	y := editDoc(t, ns, "b.md", "# Motivering\nHet voorstel is ingetrokken.")
	sync1 := waitSyncJob(t, ns, idx, "")
	if !strings.Contains(sync1.Name, "-"+r1+"-sync-") {
		t.Fatalf("sync Job %s is not into the active revision %s", sync1.Name, r1)
	}
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, sync1.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Revision != r1 || p.Strategy.Size != 64 || !p.Incremental {
		t.Fatalf("sync plan revision %s strategy size %d incremental %v, want %s, 64 (r1's own) and true", p.Revision, p.Strategy.Size, p.Incremental, r1)
	}
	finishJob(t, sync1, 0, string(syncResult))
	eventually(t, 30*time.Second, "r1 synced", func() (bool, error) { return revisionOf(t, ns, r1).CorpusRevision == y, nil })

	// r2 finishes on the older corpus revision: it catches up before it takes the alias.
	c2, err := collectionOf(ns, r2)
	if err != nil {
		t.Fatal(err)
	}
	writeChunks(t, c2, r2)
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 6, Tokens: 600, Seconds: 2})
	finishJob(t, build2, 0, string(res))
	sync2 := waitSyncJob(t, ns, idx, sync1.Name)
	if !strings.Contains(sync2.Name, "-"+r2+"-sync-") {
		t.Fatalf("sync Job %s is not the candidate's (%s)", sync2.Name, r2)
	}
	time.Sleep(time.Second)
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("the candidate took the alias (%s) before it caught up with the Corpus", got)
	}
	finishJob(t, sync2, 0, string(syncResult))
	waitActive(t, ns, "besluiten", r2)
	if got := revisionOf(t, ns, r2).CorpusRevision; got != y {
		t.Fatalf("r2 serves corpus revision %s, want %s", got, y)
	}
	// Defect 13: the finished sync Jobs of the revision that no longer serves go.
	eventually(t, 30*time.Second, "r1's sync Jobs deleted", func() (bool, error) {
		for _, j := range syncJobsOf(t, ns, r1) {
			if j.DeletionTimestamp.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
}

// Defect 13: a failed sync stayed stalled until someone set ragops.dev/retry.
func TestFailedSyncIsRetriedAutomaticallyWithBackoff(t *testing.T) {
	ns := newNamespace(t)
	r1, sync, corpusRev := syncFixture(t, ns)
	idx := getIndex(t, ns, "besluiten")
	// It failed 40 s ago: the first back-off (30 s) has passed.
	finishJobAt(t, sync, metav1.NewTime(time.Now().Add(-40*time.Second)), 1, `{"error":"weaviate: connection refused"}`)
	again := waitSyncJob(t, ns, idx, sync.Name)
	if !strings.HasSuffix(again.Name, "-a1") {
		t.Errorf("automatic retry Job %s, want the -a1 attempt", again.Name)
	}
	if rev := revisionOf(t, ns, r1); rev.SyncFailures != 1 {
		t.Errorf("syncFailures %d, want 1", rev.SyncFailures)
	}
	// The retry fails now: it waits out the next back-off (60 s), saying so.
	finishJob(t, again, 1, `{"error":"weaviate: connection refused"}`)
	eventually(t, 30*time.Second, "Stalled naming the next automatic retry", stalledWith(t, ns, "BuildFailed", "retrying automatically in"))
	if c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled); !strings.Contains(c.Message, "retry 2 of 5") {
		t.Errorf("Stalled message %q, want retry 2 of 5", c.Message)
	}
	if r := revisionOf(t, ns, r1); r.CorpusRevision == corpusRev {
		t.Fatalf("a failed sync recorded corpus revision %s", corpusRev)
	}
}

// collectionOf returns fixture's collection name of revision rev in ns.
func collectionOf(ns, rev string) (string, error) {
	return vectorstore.CollectionName(ns, "besluiten", rev)
}

// finishThenNext finishes the running sync Job of revision rev, waits until rev records
// wrote (its corpus revision), then for the next sync Job, which must sync corpus revision
// next; it returns that Job.
func finishThenNext(t *testing.T, ns string, idx *ragopsv1alpha1.Index, rev string, running *batchv1.Job, wrote, next string) *batchv1.Job {
	t.Helper()
	finishJob(t, running, 0, string(syncResult))
	eventually(t, 30*time.Second, "corpus revision "+wrote+" recorded", func() (bool, error) {
		return revisionOf(t, ns, rev).CorpusRevision == wrote, nil
	})
	job := waitSyncJob(t, ns, idx, running.Name)
	if job.Annotations["ragops.dev/corpus-revision"] != next {
		t.Fatalf("sync Job %s annotations %v, want corpus revision %s", job.Name, job.Annotations, next)
	}
	return job
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
