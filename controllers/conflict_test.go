package controllers_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// conflictingStatus refuses, while armed, every status patch of an Index in namespace ns with
// a Conflict, as the API server does when another writer got there first.
type conflictingStatus struct {
	client.Client
	ns        string
	armed     *atomic.Bool
	conflicts *atomic.Int32
}

func (c conflictingStatus) Status() client.SubResourceWriter {
	return conflictingWriter{c.Client.Status(), c}
}

type conflictingWriter struct {
	client.SubResourceWriter
	c conflictingStatus
}

func (w conflictingWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, ok := obj.(*ragopsv1alpha1.Index); ok && obj.GetNamespace() == w.c.ns && w.c.armed.Load() {
		w.c.conflicts.Add(1)
		return apierrors.NewConflict(schema.GroupResource{Group: ragopsv1alpha1.GroupVersion.Group, Resource: "indexes"}, obj.GetName(),
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// Design gap of issue 32: the side effects a reconcile makes before its one status patch (a
// build Job created, the alias moved) happen again when that patch meets a Conflict and the
// reconcile reruns from what the API server holds. Here every Index status patch conflicts
// while a new revision is built and rolled out: the reruns adopt the same build Job (no second
// one, no second attempt), moving the alias again is a no-op, the previous revision's
// collection is kept, and once the patches go through the status records one build.
func TestSideEffectsBeforeAConflictingStatusPatchAreIdempotent(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	r1, c1 := buildRevision(t, ns, "besluiten")
	waitActive(t, ns, "besluiten", r1)

	var armed atomic.Bool
	var conflicts atomic.Int32
	restartManagerWith(t, func(c client.Client) client.Client {
		return conflictingStatus{Client: c, ns: ns, armed: &armed, conflicts: &conflicts}
	})
	armed.Store(true)
	setStrategySize(t, ns, 100)
	idx := getIndex(t, ns, "besluiten")
	var buildJobs []string
	eventually(t, 30*time.Second, "the new revision's build Job", func() (bool, error) {
		buildJobs = nil
		for _, j := range ownedJobs(t, ns, idx) {
			if strings.Contains(j.Name, "-build") && !strings.Contains(j.Name, r1) {
				buildJobs = append(buildJobs, j.Name)
			}
		}
		return len(buildJobs) > 0, nil
	})
	job := waitJob(t, ns, buildJobs[0])
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	chunks := writeChunks(t, p.Collection, p.Revision)
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: int64(chunks), Tokens: 600, Seconds: 2})
	finishJob(t, job, 0, string(res))
	eventually(t, 30*time.Second, "the alias moved by a reconcile whose status patch conflicted", func() (bool, error) {
		return aliasTarget(t, ns, "besluiten") == p.Collection, nil
	})
	time.Sleep(2 * time.Second) // more conflicting reruns, each moving the alias again
	if got := getIndex(t, ns, "besluiten"); got.Status.ActiveRevision != r1 {
		t.Fatalf("active revision %q recorded while every status patch conflicted", got.Status.ActiveRevision)
	}
	before := conflicts.Load()
	armed.Store(false)
	idx = waitActive(t, ns, "besluiten", p.Revision)
	if before < 3 {
		t.Fatalf("%d status patches conflicted, want several reruns", before)
	}
	buildJobs = nil
	for _, j := range ownedJobs(t, ns, idx) {
		if strings.Contains(j.Name, p.Revision) && strings.Contains(j.Name, "-build") {
			buildJobs = append(buildJobs, j.Name)
		}
	}
	rev := idx.Status.Revisions[0]
	if len(buildJobs) != 1 || rev.Name != p.Revision || rev.Attempt > 1 || rev.Chunks != int64(chunks) || rev.Documents != 3 {
		t.Errorf("after %d conflicts: build Jobs %v, revision %s attempt %d with %d documents %d chunks; want one Job, attempt 1, 3 and %d",
			before, buildJobs, rev.Name, rev.Attempt, rev.Documents, rev.Chunks, chunks)
	}
	if got := aliasTarget(t, ns, "besluiten"); got != p.Collection {
		t.Errorf("alias points at %q, want %q", got, p.Collection)
	}
	if _, err := directStore(t).Collection(ctx, c1); err != nil {
		t.Errorf("previous revision's collection %s: %v, want it kept", c1, err)
	}
	if n, err := directStore(t).Count(ctx, p.Collection); err != nil || n != chunks {
		t.Errorf("collection %s holds %d chunks (err %v), want %d", p.Collection, n, err, chunks)
	}
}
