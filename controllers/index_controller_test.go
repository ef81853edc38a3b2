package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

func TestSpecChangeBuildsNewRevisionAndRevertMovesAliasBack(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)

	r1, c1 := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r1)
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("alias points at %q, want %q", got, c1)
	}
	if idx.Status.Chunks != 6 || idx.Status.Revisions[0].TokensPerSecond != 300 {
		t.Errorf("status chunks=%d tokens/s=%d, want 6 and 300", idx.Status.Chunks, idx.Status.Revisions[0].TokensPerSecond)
	}
	job1 := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", r1))
	if *job1.Spec.Completions != 1 || job1.Spec.Template.Spec.Containers[0].Args[0] != "embed" {
		t.Errorf("build Job: completions %d args %v", *job1.Spec.Completions, job1.Spec.Template.Spec.Containers[0].Args)
	}

	setStrategySize(t, ns, 128)
	r2, c2 := buildRevision(t, ns, "besluiten")
	if r2 == r1 {
		t.Fatalf("strategy change kept revision %s", r1)
	}
	waitActive(t, ns, "besluiten", r2)
	if got := aliasTarget(t, ns, "besluiten"); got != c2 {
		t.Fatalf("alias points at %q, want %q", got, c2)
	}

	// Revert: the kept revision takes the alias back without a new Job.
	setStrategySize(t, ns, 64)
	idx = waitActive(t, ns, "besluiten", r1)
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("after revert alias points at %q, want %q", got, c1)
	}
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 2 {
		t.Errorf("revert created a Job: %d Jobs in the namespace, want 2", len(jobs.Items))
	}
	again := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", r1))
	if again.UID != job1.UID {
		t.Errorf("revision %s was rebuilt (Job UID changed)", r1)
	}
	if len(idx.Status.Revisions) != 2 {
		t.Errorf("revisions kept: %d, want 2", len(idx.Status.Revisions))
	}
}

func TestRevisionHistoryLimitDeletesOldCollections(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Rollout.RevisionHistoryLimit = 1 })
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	setStrategySize(t, ns, 100)
	r2, _ := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r2)
	eventually(t, 20*time.Second, "old collection deleted", func() (bool, error) {
		_, err := directStore(t).Collection(context.Background(), c1)
		return err != nil, nil
	})
	// The controller deletes the collection first and then drops the revision from status.
	eventually(t, 20*time.Second, "only "+r2+" in status.revisions", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 1 && idx.Status.Revisions[0].Name == r2, nil
	})
}

// A finished build Job whose deletion hangs (a finalizer, a slow garbage collector) writes
// nothing: it does not keep its revision, or the revision's collection, past the history limit.
func TestPruneDoesNotWaitForAFinishedJobsDeletion(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.Rollout.RevisionHistoryLimit = 1 })
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", r1))
	base := job.DeepCopy()
	job.Finalizers = append(job.Finalizers, "test.ragops.dev/hold")
	if err := env.Client.Patch(ctx, job, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var j batchv1.Job
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &j); err == nil {
			b := j.DeepCopy()
			j.Finalizers = nil
			_ = env.Client.Patch(ctx, &j, client.MergeFrom(b))
		}
	})
	if err := env.Client.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	setStrategySize(t, ns, 100)
	r2, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r2)
	eventually(t, 20*time.Second, "only "+r2+" in status.revisions, "+c1+" deleted", func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		_, err := directStore(t).Collection(ctx, c1)
		return err != nil && len(idx.Status.Revisions) == 1 && idx.Status.Revisions[0].Name == r2, nil
	})
	var held batchv1.Job
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), &held); err != nil || held.DeletionTimestamp.IsZero() {
		t.Fatalf("the finished Job's deletion should still be held by its finalizer (get: %v)", err)
	}
}

func TestGatedRolloutMovesAliasOnlyForPassingCandidate(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Rollout = ragopsv1alpha1.RolloutSpec{Policy: ragopsv1alpha1.RolloutEvaluationGated, RevisionHistoryLimit: 3,
			Gate: &ragopsv1alpha1.RolloutGate{MinRecall: ptr.To(0.5), Evaluation: ragopsv1alpha1.EvaluationParameters{
				Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
				Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"},
			}}}
	})
	ctx := context.Background()
	// The first revision has nothing to regress from and goes live.
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	gate := func(rev string, recall float64) {
		t.Helper()
		name := "besluiten-gate-" + rev
		var ev ragopsv1alpha1.Evaluation
		eventually(t, 30*time.Second, "gating Evaluation "+name, func() (bool, error) {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ev) == nil, nil
		})
		if ev.Spec.Revision != rev || metav1.GetControllerOf(&ev) == nil {
			t.Fatalf("gate Evaluation revision %q owner %v", ev.Spec.Revision, metav1.GetControllerOf(&ev))
		}
		var jobs batchv1.JobList
		eventually(t, 30*time.Second, "evaluation Job", func() (bool, error) {
			err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: name})
			return err == nil && len(jobs.Items) == 1, err
		})
		var p plan.Evaluate
		if err := json.Unmarshal([]byte(planOf(t, ns, jobs.Items[0].Name)), &p); err != nil {
			t.Fatal(err)
		}
		if p.Revision != rev || p.Mode != ragopsv1alpha1.ModeBM25 || p.K[0] != 10 {
			t.Fatalf("evaluation plan %+v", p)
		}
		res, _ := json.Marshal(plan.EvaluateResult{Queries: 50, Metrics: []plan.MetricsAtK{{K: 10, Recall: recall, NDCG: recall - 0.1, MRR: recall - 0.2}}})
		finishJob(t, &jobs.Items[0], 0, string(res))
	}

	setStrategySize(t, ns, 96)
	r2, _ := buildRevision(t, ns, "besluiten")
	gate(r2, 0.30000000000000004)
	eventually(t, 30*time.Second, "candidate rejected", func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == controllers.ReasonGateFailed && strings.Contains(c.Message, "below minRecall 0.5000"), nil
	})
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("a failing candidate got the alias: %q, want %q", got, c1)
	}
	if idx := getIndex(t, ns, "besluiten"); idx.Status.ActiveRevision != r1 {
		t.Fatalf("active revision %s, want %s", idx.Status.ActiveRevision, r1)
	}

	setStrategySize(t, ns, 80)
	r3, c3 := buildRevision(t, ns, "besluiten")
	gate(r3, 0.8612000000000001)
	waitActive(t, ns, "besluiten", r3)
	if got := aliasTarget(t, ns, "besluiten"); got != c3 {
		t.Fatalf("a passing candidate did not get the alias: %q, want %q", got, c3)
	}
	var ev ragopsv1alpha1.Evaluation
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten-gate-" + r3}, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Status.RecallAt10 == nil || *ev.Status.RecallAt10 != 0.8612 || ev.Status.Queries != 50 {
		t.Errorf("gate evaluation status recall %v queries %d, want 0.8612 and 50", ev.Status.RecallAt10, ev.Status.Queries)
	}
	// The printer column shows the rounded figure, as kubectl would print it.
	table := serverTable(t, ns, "evaluations")
	if !strings.Contains(table, `"0.8612"`) && !strings.Contains(table, `0.8612,`) {
		t.Errorf("server-side table does not show 0.8612: %s", table)
	}
	if strings.Contains(table, "0.8612000000000001") {
		t.Errorf("server-side table shows the unrounded float: %s", table)
	}
}

// serverTable returns the API server's Table rendering of a ragops resource list (what
// kubectl get prints).
func serverTable(t *testing.T, ns, resource string) string {
	t.Helper()
	rc, err := restClient()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rc.Get().AbsPath("/apis/ragops.dev/v1alpha1/namespaces", ns, resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestDeletionWithWeaviateDownIsBlockedThenCompletes(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	ctx := context.Background()

	weaviateDown.Store(true)
	defer weaviateDown.Store(false)
	idx := getIndex(t, ns, "besluiten")
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "DeletionBlocked", func() (bool, error) {
		idx := getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionDeletionBlocked)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "retrying"), nil
	})
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("alias changed while Weaviate was down: %q", got)
	}
	weaviateDown.Store(false)
	eventually(t, 60*time.Second, "Index gone", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	if got := aliasTarget(t, ns, "besluiten"); got != "" {
		t.Errorf("alias still points at %q after deletion", got)
	}
	if _, err := directStore(t).Collection(ctx, c1); err == nil {
		t.Errorf("collection %s still exists after deletion", c1)
	}
}

func TestSkipCleanupAnnotationLeavesWeaviateAlone(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	ctx := context.Background()
	idx := getIndex(t, ns, "besluiten")
	idx.Annotations = map[string]string{controllers.AnnotationSkipCleanup: "true"}
	if err := env.Client.Update(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Index gone", func() (bool, error) {
		var ix ragopsv1alpha1.Index
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ix)
		return err != nil, nil
	})
	if _, err := directStore(t).Collection(ctx, c1); err != nil {
		t.Errorf("collection %s was deleted despite %s: %v", c1, controllers.AnnotationSkipCleanup, err)
	}
}

func TestFailedBuildIsStalledWithThePodMessage(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return idx.Status.Revision != "", nil
	})
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", idx.Status.Revision))
	finishJob(t, job, 1, `{"error":"weaviate: collection Rag_x: dimension mismatch: expected 384, got 768"}`)
	eventually(t, 30*time.Second, "Stalled BuildFailed", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonBuildFailed && strings.Contains(c.Message, "expected 384, got 768"), nil
	})
	if r := condition(idx, ragopsv1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", r)
	}
	if c := condition(idx, ragopsv1alpha1.ConditionStalled); !strings.Contains(c.Message, controllers.AnnotationRetry) {
		t.Errorf("Stalled message %q does not say how to retry", c.Message)
	}

	// The fault is fixed; a retry annotation rebuilds the same revision once, under a new Job.
	retry := func(v string) {
		t.Helper()
		base := getIndex(t, ns, "besluiten")
		patched := base.DeepCopy()
		metav1.SetMetaDataAnnotation(&patched.ObjectMeta, controllers.AnnotationRetry, v)
		if err := env.Client.Patch(context.Background(), patched, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	retry("1")
	rev, _ := buildAttempt(t, ns, "besluiten", 2)
	idx = waitActive(t, ns, "besluiten", rev)
	if got := idx.Status.Revisions[0]; got.Attempt != 2 || got.Chunks != 6 || idx.Status.LastHandledRetry != "1" {
		t.Errorf("after retry: attempt %d chunks %d lastHandledRetry %q, want 2, 6, \"1\"", got.Attempt, got.Chunks, idx.Status.LastHandledRetry)
	}
	// The resumed document's tokens count in tokens, not in the rate: (600 - 200) / 2 s.
	if got := idx.Status.Revisions[0]; got.Tokens != 600 || got.TokensPerSecond != 200 {
		t.Errorf("after a resumed retry: %d tokens at %d tokens/s, want 600 at 200", got.Tokens, got.TokensPerSecond)
	}
	// An unchanged value on a Ready Index starts nothing.
	retry("1")
	time.Sleep(2 * time.Second)
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if strings.HasSuffix(j.Name, "-build-3") {
			t.Errorf("unchanged retry annotation started %s", j.Name)
		}
	}
}

func TestHostileSpecsGiveConditionsNamingTheProblem(t *testing.T) {
	ctx := context.Background()
	t.Run("missing corpus", func(t *testing.T) {
		ns := newNamespace(t)
		fixture(t, ns, func(ix *ragopsv1alpha1.Index) { ix.Spec.CorpusRef.Name = "nope" })
		eventually(t, 20*time.Second, "CorpusNotFound", func() (bool, error) {
			c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled)
			return c != nil && c.Reason == controllers.ReasonCorpusNotFound && strings.Contains(c.Message, `Corpus "nope" not found`), nil
		})
	})
	t.Run("secret without the key", func(t *testing.T) {
		ns := newNamespace(t)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wv"}, Data: map[string][]byte{"token": []byte("x")}}
		if err := env.Client.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
		fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
			ix.Spec.Weaviate.APIKeySecretRef = &ragopsv1alpha1.SecretKeySelector{Name: "wv", Key: "api-key"}
		})
		eventually(t, 20*time.Second, "SecretKeyMissing", func() (bool, error) {
			c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled)
			return c != nil && c.Reason == controllers.ReasonSecretKeyMissing && strings.Contains(c.Message, `Secret "wv" has no key "api-key"`), nil
		})
		// Adding the key heals it: the Secret watch re-reconciles the Index.
		sec.Data["api-key"] = []byte("k")
		if err := env.Client.Update(ctx, sec); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "build started", func() (bool, error) {
			idx := getIndex(t, ns, "besluiten")
			return len(idx.Status.Revisions) == 1 && condition(idx, ragopsv1alpha1.ConditionStalled) == nil, nil
		})
	})
	t.Run("strategy deleted while in use", func(t *testing.T) {
		ns := newNamespace(t)
		fixture(t, ns, nil)
		r1, _ := buildRevision(t, ns, "besluiten")
		waitActive(t, ns, "besluiten", r1)
		var cs ragopsv1alpha1.ChunkingStrategy
		eventually(t, 20*time.Second, "strategy lists its Index", func() (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fixed"}, &cs)
			return err == nil && len(cs.Status.Indexes) == 1 && cs.Status.Indexes[0] == "besluiten", err
		})
		if err := env.Client.Delete(ctx, &cs); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "StrategyNotFound", func() (bool, error) {
			c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionStalled)
			return c != nil && c.Reason == controllers.ReasonStrategyNotFound && strings.Contains(c.Message, `ChunkingStrategy "fixed" not found`), nil
		})
	})
}

func TestSteadyStateWritesNoStatus(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)
	time.Sleep(2 * time.Second) // let the last transitions settle

	ctx := context.Background()
	w, err := watchClient().Watch(ctx, &ragopsv1alpha1.IndexList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cw, err := watchClient().Watch(ctx, &ragopsv1alpha1.CorpusList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Stop()
	// Nudge reconciles without changing anything: the periodic requeues and an annotation
	// touch on the strategy must not write status.
	deadline := time.After(30 * time.Second)
	updates := 0
	for {
		select {
		case e := <-w.ResultChan():
			if e.Type == watch.Modified {
				updates++
			}
		case e := <-cw.ResultChan():
			if e.Type == watch.Modified {
				updates++
			}
		case <-deadline:
			if updates != 0 {
				t.Fatalf("%d status writes during 30 s of steady state, want 0", updates)
			}
			return
		}
	}
}

func TestCorpusChangeRunsIncrementalSyncIntoActiveRevision(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	idx := waitActive(t, ns, "besluiten", r1)
	before := idx.Status.Revisions[0].CorpusRevision
	ctx := context.Background()

	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["b.md"] = "# Motivering\nHet voorstel is gewijzigd."
	delete(cm.Data, "c.md")
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	var corpus ragopsv1alpha1.Corpus
	eventually(t, 20*time.Second, "new corpus revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &corpus)
		return err == nil && corpus.Status.Revision != before && corpus.Status.Documents == 2, err
	})
	var jobs batchv1.JobList
	eventually(t, 20*time.Second, "sync Job", func() (bool, error) {
		err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelRevision: r1})
		for _, j := range jobs.Items {
			if strings.Contains(j.Name, "-sync-") {
				return true, nil
			}
		}
		return false, err
	})
	var sync batchv1.Job
	for _, j := range jobs.Items {
		if strings.Contains(j.Name, "-sync-") {
			sync = j
		}
	}
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, sync.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Incremental || p.Revision != r1 {
		t.Fatalf("sync plan incremental=%v revision=%s, want true and %s", p.Incremental, p.Revision, r1)
	}
	idx = getIndex(t, ns, "besluiten")
	if c := condition(idx, ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the active revision stopped serving during the sync: Ready=%+v", c)
	}
	// What the embedder does: delete the removed document's chunks, replace the changed one.
	s := directStore(t)
	if _, err := s.DeleteDocument(ctx, p.Collection, "c.md"); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(plan.BuildResult{Documents: 1, Deleted: 1, Unchanged: 1, Chunks: 2})
	finishJob(t, &sync, 0, string(res))
	eventually(t, 30*time.Second, "sync recorded", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		rev := idx.Status.Revisions[0]
		return rev.CorpusRevision == corpus.Status.Revision && rev.Chunks == 4 && rev.Documents == 2 && condition(idx, ragopsv1alpha1.ConditionReconciling) == nil, nil
	})
	if idx.Status.ActiveRevision != r1 {
		t.Errorf("a corpus sync changed the active revision to %s", idx.Status.ActiveRevision)
	}
}

func TestLostCollectionIsRebuiltAndServesAgain(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	// Weaviate loses the collection behind the operator's back (no event reaches it: the
	// periodic drift check must notice).
	ctx := context.Background()
	if err := directStore(t).Client().Schema().ClassDeleter().WithClassName(c1).Do(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := directStore(t).CollectionExists(ctx, c1); ok || err != nil {
		t.Fatalf("collection %s still exists after its deletion (err %v)", c1, err)
	}
	// The CollectionLost condition lasts until the next reconcile (the new Job's creation comes
	// at once); the revision's message and the Warning Event stay.
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "revision rebuilding, attempt 2", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		rev := idx.Status.Revisions[0]
		return rev.Attempt == 2 && rev.Phase == ragopsv1alpha1.RevisionBuilding &&
			strings.Contains(rev.Message, c1+" is missing from Weaviate: rebuilding (attempt 2)"), nil
	})
	if c := condition(idx, ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready %+v while the collection is gone, want False", c)
	}
	if idx.Status.ActiveRevision != "" {
		t.Errorf("activeRevision %q while its collection is gone, want empty", idx.Status.ActiveRevision)
	}
	eventually(t, 30*time.Second, "Warning Event CollectionLost", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == controllers.ReasonCollectionLost && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, c1) {
				return true, nil
			}
		}
		return false, nil
	})

	r2, c2 := buildAttempt(t, ns, "besluiten", 2)
	if r2 != r1 || c2 != c1 {
		t.Fatalf("rebuild made revision %s collection %s, want the same %s %s", r2, c2, r1, c1)
	}
	idx = waitActive(t, ns, "besluiten", r1)
	if got := aliasTarget(t, ns, "besluiten"); got != c1 {
		t.Fatalf("alias points at %q, want %q", got, c1)
	}
	if rev := idx.Status.Revisions[0]; rev.Attempt != 2 || rev.Chunks != 6 || idx.Status.Chunks != 6 {
		t.Errorf("rebuilt revision attempt=%d chunks=%d index chunks=%d, want 2, 6, 6", rev.Attempt, rev.Chunks, idx.Status.Chunks)
	}
	var old batchv1.Job
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("besluiten-%s-build", r1)}, &old)
	if err == nil && old.DeletionTimestamp.IsZero() {
		t.Errorf("the first build Job %s is still there", old.Name)
	}
}

func TestGitCorpusPinsBuildsToTheScannedCommit(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	git := &ragopsv1alpha1.GitSource{URL: "https://git.example.org/gemeente/besluiten.git", Ref: "main", Path: "docs"}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{Git: git}}
	if err := env.Client.Create(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	var scan *batchv1.Job
	eventually(t, 30*time.Second, "scan Job", func() (bool, error) {
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for i := range jobs.Items {
			if strings.HasPrefix(jobs.Items[i].Name, "besluiten-scan-") {
				scan = &jobs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	const commit = "3f9c2b7e0d41a8c6b5e2f1a09d8c7b6a5f4e3d2c"
	res, _ := json.Marshal(plan.ScanResult{Documents: 3, Bytes: 120, Revision: "c0ffee", Commit: commit})
	finishJob(t, scan, 0, string(res))
	eventually(t, 30*time.Second, "Corpus Ready with the commit", func() (bool, error) {
		var c ragopsv1alpha1.Corpus
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c); err != nil {
			return false, err
		}
		r := condition(&c, ragopsv1alpha1.ConditionReady)
		return c.Status.Commit == commit && r != nil && r.Status == metav1.ConditionTrue && strings.Contains(r.Message, "commit "+commit), nil
	})

	fixtureIndexOnly(t, ns)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return idx.Status.Revision != "", nil
	})
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", idx.Status.Revision))
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Source.Git == nil || p.Source.Git.Ref != commit || p.Source.Git.URL != git.URL || p.Source.Git.Path != "docs" {
		t.Errorf("build plan Git source %+v, want %s at commit %s, path docs", p.Source.Git, git.URL, commit)
	}
	var c ragopsv1alpha1.Corpus
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(corpus), &c); err != nil || c.Spec.Git.Ref != "main" {
		t.Errorf("Corpus spec.git.ref %q (err %v): the pin must not touch the spec", c.Spec.Git.Ref, err)
	}
}

// TestEvaluationQueriesEachRevisionWithItsOwnModel: after the Index moves to another model
// and precision, an Evaluation of the earlier revision still embeds its queries with the
// model and precision that revision was built with, and one of the new revision with the new.
func TestEvaluationQueriesEachRevisionWithItsOwnModel(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	r1, _ := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	idx := getIndex(t, ns, "besluiten")
	idx.Spec.Model = ragopsv1alpha1.ModelSpec{Name: "e5-small-v2", ImagePath: "/models/e5-small-v2"}
	idx.Spec.Embedder.Precision = ragopsv1alpha1.PrecisionFP16
	if err := env.Client.Update(ctx, idx); err != nil {
		t.Fatal(err)
	}
	r2, _ := buildRevision(t, ns, "besluiten")
	idx = waitActive(t, ns, "besluiten", r2)
	for _, rev := range idx.Status.Revisions {
		want, precision := "all-minilm-l6-v2", ragopsv1alpha1.PrecisionFP32
		if rev.Name == r2 {
			want, precision = "e5-small-v2", ragopsv1alpha1.PrecisionFP16
		}
		if rev.Model == nil || rev.Model.Name != want || rev.Precision != precision {
			t.Errorf("status of revision %s records model %+v precision %q, want %s %s", rev.Name, rev.Model, rev.Precision, want, precision)
		}
	}

	evaluate := func(name, rev string) plan.Evaluate {
		t.Helper()
		ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"}, Revision: rev,
				EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeDense, K: []int32{10},
					Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "queries"}, Split: "test"}}}}
		if err := env.Client.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
		var jobs batchv1.JobList
		eventually(t, 30*time.Second, "Job of Evaluation "+name, func() (bool, error) {
			err := env.Client.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelOwner: name})
			return err == nil && len(jobs.Items) == 1, err
		})
		var p plan.Evaluate
		if err := json.Unmarshal([]byte(planOf(t, ns, jobs.Items[0].Name)), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := evaluate("old-revision", r1); p.Revision != r1 || p.ModelDir != "/models/all-minilm-l6-v2" || p.Embedder.Precision != ragopsv1alpha1.PrecisionFP32 {
		t.Errorf("Evaluation of revision %s: plan revision %s model %s precision %q, want the MiniLM fp32 it was built with", r1, p.Revision, p.ModelDir, p.Embedder.Precision)
	}
	if p := evaluate("active-revision", ""); p.Revision != r2 || p.ModelDir != "/models/e5-small-v2" || p.Embedder.Precision != ragopsv1alpha1.PrecisionFP16 {
		t.Errorf("Evaluation of the active revision: plan revision %s model %s precision %q, want %s e5-small-v2 fp16", p.Revision, p.ModelDir, p.Embedder.Precision, r2)
	}
}
