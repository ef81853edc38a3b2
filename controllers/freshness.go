package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheCatchUp is how soon a reconcile that found its own last write missing from the cache
// runs again: the watch delivers it within milliseconds.
const cacheCatchUp = 100 * time.Millisecond

// staleAfter bounds how long a recorded write holds reconciles back, should its watch event
// never come (a write that was later compacted away, say): after it the cache is trusted.
const staleAfter = 10 * time.Second

// ownWrites keeps a reconciler from acting twice on one decision. After a reconcile writes its
// object (a finalizer, its status), the informer cache still serves the version it read for a
// few milliseconds; a reconcile queued meanwhile (a Job's or an Evaluation's event) would read
// that copy and repeat what the write recorded as done: move an alias again, create a Job of
// an attempt already replaced, emit the same Event. ownWrites remembers, per object, the
// resourceVersion that was read before the write; a reconcile that gets exactly that version
// from the cache is behind and waits cacheCatchUp. Any other version is newer (the cache only
// moves forward), so the entry is dropped. The zero value is ready to use; it is safe for
// concurrent reconciles.
type ownWrites struct {
	mu   sync.Mutex
	read map[types.NamespacedName]staleVersion
}

type staleVersion struct {
	resourceVersion string
	at              time.Time
}

// behind reports whether obj, as the cache served it, predates this reconciler's last write
// of it.
func (w *ownWrites) behind(obj client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(obj)
	s, ok := w.read[key]
	if !ok {
		return false
	}
	if s.resourceVersion == obj.GetResourceVersion() && time.Since(s.at) < staleAfter {
		return true
	}
	delete(w.read, key)
	return false
}

// record notes, at the end of a reconcile, that obj was written when its resourceVersion
// moved from read (the version the reconcile started from).
func (w *ownWrites) record(obj client.Object, read string) {
	if obj.GetResourceVersion() == read {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.read == nil {
		w.read = map[types.NamespacedName]staleVersion{}
	}
	w.read[client.ObjectKeyFromObject(obj)] = staleVersion{resourceVersion: read, at: time.Now()}
}

// forget drops what is known about an object that is gone.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.read, key)
}
