package controllers

import (
	"testing"
	"time"
)

// TestSyncQueueAdmitsLongestWaitingFirst: with one slot, a revision that asks often does not
// overtake one that waits longer; an admitted Job counts until the cache lists it finished,
// and a waiter that stops asking loses its place.
func TestSyncQueueAdmitsLongestWaitingFirst(t *testing.T) {
	var q syncQueue
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const stale = time.Minute
	if ok, _, _ := q.admit("ns/a/r", "ns/a-sync", nil, 1, stale, at(0)); !ok {
		t.Fatal("a: not admitted into a free slot")
	}
	// a's Job is not listed yet: it holds the slot.
	if ok, busy, ahead := q.admit("ns/b/r", "ns/b-sync", nil, 1, stale, at(1)); ok || busy != 1 || ahead != 0 {
		t.Fatalf("b: admitted %v busy %d ahead %d, want waiting first behind a's unlisted Job", ok, busy, ahead)
	}
	if ok, _, ahead := q.admit("ns/c/r", "ns/c-sync", map[string]bool{"ns/a-sync": true}, 1, stale, at(2)); ok || ahead != 1 {
		t.Fatalf("c: admitted %v ahead %d, want waiting behind b", ok, ahead)
	}
	// a finished: c asks first, but b has waited longer.
	done := map[string]bool{"ns/a-sync": false}
	if ok, busy, ahead := q.admit("ns/c/r", "ns/c-sync", done, 1, stale, at(3)); ok || busy != 0 || ahead != 1 {
		t.Fatalf("c: admitted %v busy %d ahead %d, want waiting behind b", ok, busy, ahead)
	}
	if ok, _, _ := q.admit("ns/b/r", "ns/b-sync", done, 1, stale, at(4)); !ok {
		t.Fatal("b: not admitted once a finished")
	}
	if ok, _, _ := q.admit("ns/c/r", "ns/c-sync", done, 1, stale, at(5)); ok {
		t.Fatal("c: admitted while b's Job holds the slot")
	}
	// b's Job finished and d waits; c stops asking: after stale it no longer holds d back.
	done["ns/b-sync"] = false
	if ok, _, ahead := q.admit("ns/d/r", "ns/d-sync", done, 1, stale, at(6)); ok || ahead != 1 {
		t.Fatalf("d: admitted %v ahead %d, want waiting behind c", ok, ahead)
	}
	if ok, _, _ := q.admit("ns/d/r", "ns/d-sync", done, 1, stale, at(6+90)); !ok {
		t.Fatal("d: held back by c, which stopped asking")
	}
}
