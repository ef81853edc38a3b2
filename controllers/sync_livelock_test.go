package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/workload"
)

// running reports whether a Job has neither finished nor been deleted.
func running(j *batchv1.Job) bool {
	return j.DeletionTimestamp.IsZero() && j.Status.Succeeded == 0 && j.Status.Failed == 0
}

// Issue 51, no livelock: the Corpus changes every 2 s while each sync takes 5 s. A running
// sync is not stopped by the next corpus revision: it finishes, the revision records what it
// wrote, and the next sync goes to the newest corpus revision, so the served corpus
// revision moves forward while the changes go on (before, every change restarted the sync
// and none ever finished), one sync runs at a time, and once the changes stop it catches up
// with the last one.
func TestSyncsKeepUpWithACorpusThatChangesFasterThanTheyRun(t *testing.T) {
	ns := newNamespace(t)
	r1, _, _ := syncFixture(t, ns)
	start := revisionOf(t, ns, r1).CorpusRevision
	const took = 5 * time.Second
	finished := map[string]bool{}
	most := 0
	play := func() {
		n := 0
		for _, j := range syncJobsOf(t, ns, r1) {
			switch {
			case !j.DeletionTimestamp.IsZero():
				playGC(t, j) // as the garbage collector does once the pods are gone
			case running(&j):
				n++
				if !finished[j.Name] && time.Since(j.CreationTimestamp.Time) >= took {
					finished[j.Name] = true
					finishJob(t, &j, 0, string(syncResult))
				}
			}
		}
		most = max(most, n)
	}
	served := map[string]bool{}
	var last string
	for i := range 10 {
		last = editDoc(t, ns, "c.md", fmt.Sprintf("# Stemverhouding\n%d voor, 8 tegen.", 30+i))
		for until := time.Now().Add(2 * time.Second); time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
			play()
			if c := revisionOf(t, ns, r1).CorpusRevision; c != "" && c != start {
				served[c] = true
			}
		}
	}
	if len(served) < 2 {
		t.Fatalf("while the Corpus changed every 2 s the served corpus revision moved past %s to %d revision(s) (%v); want syncs that finish", start, len(served), served)
	}
	if most > 1 {
		t.Fatalf("%d sync Jobs of revision %s ran at once", most, r1)
	}
	eventually(t, 90*time.Second, "the served corpus revision catches up with the last one", func() (bool, error) {
		play()
		idx := getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return revisionOf(t, ns, r1).CorpusRevision == last && c != nil && c.Status == metav1.ConditionTrue, nil
	})
}

// isolateSyncs suspends every Index outside ns and deletes their sync Jobs (earlier tests
// leave running ones, which would hold the manager's sync slots).
func isolateSyncs(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	var idxs ragopsv1alpha1.IndexList
	if err := env.Client.List(ctx, &idxs); err != nil {
		t.Fatal(err)
	}
	for i := range idxs.Items {
		idx := &idxs.Items[i]
		if idx.Namespace == ns || idx.Spec.Suspend || !idx.DeletionTimestamp.IsZero() {
			continue
		}
		base := idx.DeepCopy()
		idx.Spec.Suspend = true
		if err := env.Client.Patch(ctx, idx, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "other Indexes suspended and their syncs gone", func() (bool, error) {
		if err := env.Client.List(ctx, &idxs); err != nil {
			return false, err
		}
		for _, idx := range idxs.Items {
			if idx.Namespace != ns && idx.DeletionTimestamp.IsZero() && idx.Status.ObservedGeneration != idx.Generation {
				return false, nil
			}
		}
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.MatchingLabels{workload.LabelJobKind: workload.JobKindSync}); err != nil {
			return false, err
		}
		left := 0
		for i := range jobs.Items {
			j := &jobs.Items[i]
			if j.Namespace == ns {
				continue
			}
			left++
			if err := env.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return false, err
			}
			playGC(t, *j)
		}
		return left == 0, nil
	})
}

// Issue 51: --max-concurrent-syncs bounds the sync Jobs across Indexes. Three Indexes on one
// Corpus, limit 1: a corpus change makes each need a sync, never more than one sync Job runs
// at once, and all three end holding the new corpus revision.
func TestMaxConcurrentSyncsBoundsSyncsAcrossIndexes(t *testing.T) {
	restartManagerWithOptions(t, func(o *controllers.Options) { o.MaxConcurrentSyncs = 1 })
	ns := newNamespace(t)
	isolateSyncs(t, ns)
	fixture(t, ns, nil)
	names := []string{"besluiten", "besluiten-b", "besluiten-c"}
	for _, name := range names[1:] {
		_, idx := strategyAndIndex(ns)
		idx.Name = name
		if err := env.Client.Create(context.Background(), idx); err != nil {
			t.Fatal(err)
		}
	}
	active := map[string]string{}
	for _, name := range names {
		r, _ := buildRevision(t, ns, name)
		waitActive(t, ns, name, r)
		active[name] = r
	}
	want := editDoc(t, ns, "b.md", "# Motivering\nHet voorstel is gewijzigd.")
	most, started := 0, map[string]bool{}
	eventually(t, 120*time.Second, "every Index synced", func() (bool, error) {
		var jobs batchv1.JobList
		if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelJobKind: workload.JobKindSync}); err != nil {
			return false, err
		}
		var now []*batchv1.Job
		for i := range jobs.Items {
			if j := &jobs.Items[i]; running(j) {
				now = append(now, j)
				started[j.Name] = true
			}
		}
		most = max(most, len(now))
		if len(now) > 1 {
			t.Fatalf("%d sync Jobs run at once with --max-concurrent-syncs=1: %s, %s", len(now), now[0].Name, now[1].Name)
		}
		for _, j := range now {
			if time.Since(j.CreationTimestamp.Time) >= time.Second {
				finishJob(t, j, 0, string(syncResult))
			}
		}
		for _, name := range names {
			idx := getIndex(t, ns, name)
			for _, r := range idx.Status.Revisions {
				if r.Name == active[name] && r.CorpusRevision != want {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if most != 1 || len(started) != len(names) {
		t.Fatalf("at most %d sync Jobs at once, %d started; want 1 and %d", most, len(started), len(names))
	}
}
