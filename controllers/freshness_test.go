package controllers

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
)

func indexAt(rv string) *ragopsv1alpha1.Index {
	return &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "besluiten", ResourceVersion: rv}}
}

// After a reconcile wrote its object, a cached copy at the version it had read is behind
// until the cache serves any other version; an unwritten object never is.
func TestOwnWritesHoldsBackACopyOlderThanTheLastWrite(t *testing.T) {
	var w ownWrites
	w.record(indexAt("11"), "11") // nothing written: the version did not move
	if w.behind(indexAt("11")) {
		t.Fatal("an object this reconciler did not write counts as behind")
	}
	w.record(indexAt("12"), "11")
	for i := range 2 {
		if !w.behind(indexAt("11")) {
			t.Fatalf("read %d: the copy read before the write is not behind", i+1)
		}
	}
	other := indexAt("11")
	other.Name = "tweede"
	if w.behind(other) {
		t.Error("another object at the same resourceVersion counts as behind")
	}
	if w.behind(indexAt("12")) {
		t.Fatal("the written version counts as behind")
	}
	if w.behind(indexAt("11")) {
		t.Error("the entry outlived a newer cached version")
	}

	w.record(indexAt("14"), "13")
	w.forget(client.ObjectKeyFromObject(indexAt("")))
	if w.behind(indexAt("13")) {
		t.Error("a forgotten object counts as behind")
	}

	w.record(indexAt("16"), "15")
	key := client.ObjectKeyFromObject(indexAt(""))
	w.read[key] = staleVersion{resourceVersion: "15", at: time.Now().Add(-staleAfter)}
	if w.behind(indexAt("15")) {
		t.Errorf("a write older than %s still holds reconciles back", staleAfter)
	}
}

type recordedEvents []string

func (r *recordedEvents) Eventf(_, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	*r = append(*r, fmt.Sprintf("%s %s %s: %s", eventtype, reason, action, fmt.Sprintf(note, args...)))
}

// A reconcile's Events reach the recorder only when flushed (after its status is stored),
// in the order the steps emitted them, and once.
func TestEventBufferRecordsOnlyWhenFlushed(t *testing.T) {
	var rec recordedEvents
	b := &reconcile.EventBuffer{}
	idx := indexAt("1")
	b.Eventf(idx, nil, "Normal", ReasonGatePassed, "Rollout", "recall@10 %.2f", 0.81)
	b.Eventf(idx, nil, "Normal", "AliasMoved", "Rollout", "alias %s: revision %q -> %q", "a", "r1", "r2")
	if len(rec) != 0 {
		t.Fatalf("recorded before the flush: %v", rec)
	}
	b.Flush(&rec)
	b.Flush(&rec)
	want := []string{`Normal GatePassed Rollout: recall@10 0.81`, `Normal AliasMoved Rollout: alias a: revision "r1" -> "r2"`}
	if fmt.Sprint(rec) != fmt.Sprint(want) {
		t.Errorf("recorded %q, want %q", rec, want)
	}
	b.Eventf(idx, nil, "Normal", "AliasMoved", "Rollout", "dropped")
	b.Flush(nil)
	b.Flush(&rec)
	if len(rec) != 2 {
		t.Errorf("a flush without a recorder kept its Events: %q", rec)
	}
}

// A failed worker's reason comes from its result's reason field, never from the error text;
// a crash's message is kept as it is.
func TestResultErrorReadsTheTypedReason(t *testing.T) {
	for _, tc := range []struct {
		msg, text string
		reason    plan.FailureReason
	}{
		{`{"documents":0,"error":"ModelLimitExceeded: spec.size 800","reason":"ModelLimitExceeded"}`, "ModelLimitExceeded: spec.size 800", plan.FailureModelLimitExceeded},
		{`{"documents":0,"error":"read a.md: ModelLimitExceeded: in the text"}`, "read a.md: ModelLimitExceeded: in the text", ""},
		{"  panic: runtime error\n", "panic: runtime error", ""},
	} {
		text, reason := workload.ResultError(tc.msg)
		if text != tc.text || reason != tc.reason {
			t.Errorf("workload.ResultError(%q) = %q, %q; want %q, %q", tc.msg, text, reason, tc.text, tc.reason)
		}
		if got := buildFailureReason(reason); (reason == "") != (got == ReasonBuildFailed) {
			t.Errorf("buildFailureReason(%q) = %s", reason, got)
		}
	}
}
