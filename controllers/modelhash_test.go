package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
)

// Design gap of issue 32: a model folder at a path or image was never fingerprinted. The
// revision records the hash its build reports, every later sync plan carries it, and a sync
// the worker refused for a changed folder stalls with ModelChanged and is not retried on its
// own (the revision keeps serving).
func TestRevisionRecordsItsModelHashAndASyncRefusingAChangedFolderStalls(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	const built = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const changed = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	idx, rev, job := firstBuild(t, ns)
	chunks := writeChunks(t, rev.Collection, rev.Name)
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: int64(chunks), Tokens: 600, Seconds: 2, ModelHash: built})
	finishJob(t, job, 0, string(res))
	idx = waitActive(t, ns, "besluiten", rev.Name)
	if got := idx.Status.Revisions[0].ModelHash; got != built {
		t.Fatalf("revision modelHash %q, want %q", got, built)
	}

	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["b.md"] = "# Motivering\nHet voorstel is gewijzigd."
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	sync := waitSyncJob(t, ns, idx, "")
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, sync.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.ModelHash != built {
		t.Fatalf("sync plan modelHash %q, want the revision's %q", p.ModelHash, built)
	}
	refusal, _ := json.Marshal(plan.BuildResult{Reason: plan.FailureModelChanged, Error: fmt.Sprintf("%s: the model folder /models/m holds %s, but revision %s was embedded with %s", plan.FailureModelChanged, changed, rev.Name, built)})
	finishJob(t, sync, 1, string(refusal))
	eventually(t, 30*time.Second, "Stalled ModelChanged", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonModelChanged && strings.Contains(c.Message, changed) &&
			!strings.Contains(c.Message, "retrying automatically"), nil
	})
	if idx.Status.ActiveRevision != rev.Name {
		t.Errorf("active revision %q, want %q to keep serving", idx.Status.ActiveRevision, rev.Name)
	}
}
