package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/chunkers/registry"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// TestModelLimitIsAStalledConditionNamingBothNumbers: a build refused by
// registry.CheckModelLimits (Fixed 800 tokens against all-MiniLM-L6-v2's 512 positions)
// makes the Index Stalled with reason ModelLimitExceeded and a message holding the field,
// the positions needed (802) and the model's limit (512).
func TestModelLimitIsAStalledConditionNamingBothNumbers(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, nil)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return idx.Status.Revision != "", nil
	})
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", idx.Status.Revision))
	refusal := registry.CheckModelLimits(ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 800},
		registry.ModelLimits{Name: "all-minilm-l6-v2", MaxPositions: 512, SpecialTokens: 2})
	if refusal == nil {
		t.Fatal("CheckModelLimits accepted 800 tokens for 512 positions")
	}
	msg, _ := json.Marshal(plan.BuildResult{Reason: plan.FailureModelLimitExceeded, Error: (&plan.Failure{Reason: plan.FailureModelLimitExceeded, Err: refusal}).Error()})
	finishJob(t, job, 1, string(msg))
	eventually(t, 30*time.Second, "Stalled ModelLimitExceeded", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionStalled)
		return c != nil && c.Reason == controllers.ReasonModelLimitExceeded, nil
	})
	c := condition(idx, ragopsv1alpha1.ConditionStalled)
	for _, s := range []string{"spec.size 800", "802 positions", "limit of 512 positions", "all-minilm-l6-v2"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("Stalled message %q does not contain %q", c.Message, s)
		}
	}
	if r := condition(idx, ragopsv1alpha1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", r)
	}
}

// TestTruncatedChunksInStatusEventAndReady: a build whose two shards report 1 and 2
// truncated chunks of 6 gives truncatedChunks 3 on the revision, a Warning Event
// ChunksTruncated naming 3 of 6, and a Ready message that says 3 of 6 (50.0%) were truncated.
func TestTruncatedChunksInStatusEventAndReady(t *testing.T) {
	ns := newNamespace(t)
	fixture(t, ns, func(idx *ragopsv1alpha1.Index) { idx.Spec.Embedder.Shards = 2 })
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) > 0 && idx.Status.Revisions[0].Phase == ragopsv1alpha1.RevisionBuilding, nil
	})
	rev := idx.Status.Revision
	collection, err := vectorstore.CollectionName(ns, "besluiten", rev)
	if err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev))
	ctx := context.Background()
	s := directStore(t)
	if err := s.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: collection, Revision: rev, Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	for o := range 6 {
		v := make([]float32, dims)
		v[o%dims] = 1
		chunks = append(chunks, vectorstore.Chunk{DocID: fmt.Sprintf("d%d.md", o/2), Ordinal: o % 2, Start: 0, End: 1, Text: "x", Vector: v})
	}
	if err := s.Upsert(ctx, collection, chunks); err != nil {
		t.Fatal(err)
	}
	r0, _ := json.Marshal(plan.BuildResult{Shard: 0, Documents: 2, Chunks: 4, Tokens: 400, TruncatedChunks: 1, Seconds: 1})
	r1, _ := json.Marshal(plan.BuildResult{Shard: 1, Documents: 1, Chunks: 2, Tokens: 200, TruncatedChunks: 2, Seconds: 1})
	finishJob(t, job, 0, string(r0), string(r1))
	idx = waitActive(t, ns, "besluiten", rev)
	if got := idx.Status.Revisions[0].TruncatedChunks; got != 3 {
		t.Errorf("revision truncatedChunks %d, want 3", got)
	}
	if c := condition(idx, ragopsv1alpha1.ConditionReady); !strings.Contains(c.Message, "3 of 6 chunks (50.0%) were truncated") {
		t.Errorf("Ready message %q does not report the truncation", c.Message)
	}
	eventually(t, 30*time.Second, "Warning Event ChunksTruncated", func() (bool, error) {
		var evs eventsv1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == controllers.ReasonChunksTruncated && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, "3 of 6 chunks") {
				return true, nil
			}
		}
		return false, nil
	})
}
