package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// TestBuildWaitsWhileModulesUnknown (issue 55 item 13): while Weaviate's module list cannot
// be read and none was read before (a manager restart), no build Job is created (its
// collection would be built without a vectorizer for good): Ready says the build waits and
// why. Once the list is read, the build's plan names the model server.
func TestBuildWaitsWhileModulesUnknown(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	url := "http://" + srv.HTTPAddr
	modulesDown.Store(url, struct{}{})
	t.Cleanup(func() { modulesDown.Delete(url) })
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: url, GRPCAddress: srv.GRPCAddr}
	})
	buildJobs := func() []batchv1.Job {
		var jobs batchv1.JobList
		if err := env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var out []batchv1.Job
		for _, j := range jobs.Items {
			if strings.Contains(j.Name, "-build") {
				out = append(out, j)
			}
		}
		return out
	}
	eventually(t, 60*time.Second, "Ready naming the unknown modules", func() (bool, error) {
		if jobs := buildJobs(); len(jobs) > 0 {
			var p plan.Build
			_ = json.Unmarshal([]byte(planOf(t, ns, jobs[0].Name)), &p)
			t.Fatalf("build Job %s created (plan modelServer %q) while Weaviate's modules were unknown", jobs[0].Name, p.ModelServer)
		}
		c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == controllers.ReasonWeaviateModulesUnknown, nil
	})
	c := condition(getIndex(t, ns, "besluiten"), ragopsv1alpha1.ConditionReady)
	if !strings.Contains(c.Message, vectorstore.ModuleTransformers) || !strings.Contains(c.Message, url) {
		t.Errorf("Ready message %q does not name the module and Weaviate", c.Message)
	}
	modulesDown.Delete(url)
	dep := modelServer(t, ns)
	var idx *ragopsv1alpha1.Index
	eventually(t, 60*time.Second, "a building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 1, nil
	})
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", idx.Status.Revisions[0].Name))
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://%s.%s.svc:%d", dep.Name, ns, specs.Port); p.ModelServer != want {
		t.Errorf("plan modelServer %q, want %q", p.ModelServer, want)
	}
}

// TestAliasStaysOnWiredRevision (issue 55 item 13): with serving on, a revision whose
// collection has no vectorizer does not take the alias from an active revision whose
// collection queries through its model server: Ready is Stalled with ModelServerNotWired and
// the alias stays.
func TestAliasStaysOnWiredRevision(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	ns := newNamespace(t)
	ctx := context.Background()
	dep, rev, s := buildWired(t, srv, ns, "")
	setReadyReplicas(t, dep, 1)
	waitActive(t, ns, "besluiten", rev.Name)

	setStrategySize(t, ns, 100)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a second revision building", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 2 && idx.Status.Revisions[0].Phase == ragopsv1alpha1.RevisionBuilding, nil
	})
	rev2 := idx.Status.Revisions[0]
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev2.Name))
	// The build wrote an unwired collection (built while the modules were unknown, or by
	// an operator before this one).
	if err := s.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: rev2.Collection, Revision: rev2.Name, Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	for d, doc := range []string{"a.md", "b.md", "c.md"} {
		v := make([]float32, dims)
		v[d] = 1
		chunks = append(chunks, vectorstore.Chunk{DocID: doc, Text: doc, End: 1, Vector: v})
	}
	if err := s.Upsert(ctx, rev2.Collection, chunks); err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 3, Tokens: 30, Seconds: 1})
	finishJob(t, job, 0, string(msg))

	eventually(t, 60*time.Second, "Ready naming the unwired revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		if idx.Status.ActiveRevision == rev2.Name {
			t.Fatalf("the alias moved from wired revision %s to unwired revision %s", rev.Name, rev2.Name)
		}
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return c != nil && c.Reason == controllers.ReasonModelServerNotWired, nil
	})
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	if target, found, err := s.GetAlias(ctx, alias); err != nil || !found || target != rev.Collection {
		t.Errorf("alias -> %q found=%v (%v), want %s", target, found, err, rev.Collection)
	}
	if c := condition(idx, ragopsv1alpha1.ConditionReady); !strings.Contains(c.Message, rev2.Name) || !strings.Contains(c.Message, "spec.serving.enabled") {
		t.Errorf("Ready message %q: want the revision and what to do", c.Message)
	}
}

// TestURLMismatchHasItsOwnReason (issue 55 item 16): a revision whose collection queries
// through another URL than its model server's does not take the alias, and Ready says so
// with ModelServerURLMismatch, not ModelHashMismatch (no hash differs).
func TestURLMismatchHasItsOwnReason(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	ns := newNamespace(t)
	ctx := context.Background()
	const elsewhere = "http://elsewhere.invalid:8080"
	dep, rev, s := buildWiredTo(t, srv, ns, "", func(string) vectorstore.Transformers {
		return vectorstore.Transformers{PassageURL: elsewhere, QueryURL: elsewhere}
	})
	setReadyReplicas(t, dep, 1)
	var idx *ragopsv1alpha1.Index
	eventually(t, 60*time.Second, "Ready naming the URL mismatch", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return c != nil && c.Reason == controllers.ReasonModelServerURLMismatch, nil
	})
	if c := condition(idx, ragopsv1alpha1.ConditionReady); !strings.Contains(c.Message, elsewhere) || !strings.Contains(c.Message, dep.Name) {
		t.Errorf("Ready message %q: want both URLs", c.Message)
	}
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	if _, found, err := s.GetAlias(ctx, alias); err != nil || found || idx.Status.ActiveRevision != "" {
		t.Errorf("alias found=%v (%v), active %q for revision %s wired elsewhere", found, err, idx.Status.ActiveRevision, rev.Name)
	}
}
