package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// driftChecks remembers, per Index, when Weaviate last confirmed that the active revision's
// collection exists and the alias points at it, so that the reconciles between two drift
// checks (an annotation, a Job's or an Evaluation's event, a model server's readiness poll)
// ask Weaviate nothing: Options.DriftInterval bounds how long drift goes unnoticed, not each
// reconcile. At 500 Indexes those two calls were most of a steady-state reconcile's time
// (issue 56). A check is keyed by the Index's UID, the collection and the alias, so a
// re-created Index, a moved alias or a renamed alias is checked at once. The zero value is
// ready to use; it is safe for concurrent reconciles.
type driftChecks struct {
	mu   sync.Mutex
	last map[types.NamespacedName]driftCheck
}

type driftCheck struct {
	uid               types.UID
	collection, alias string
	at                time.Time
}

// due returns how long until obj's collection and alias are to be checked again: 0 when
// they are due now (never checked, another collection or alias, or every has passed).
func (d *driftChecks) due(obj client.Object, collection, alias string, every time.Duration, now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.last[client.ObjectKeyFromObject(obj)]
	if !ok || c.uid != obj.GetUID() || c.collection != collection || c.alias != alias {
		return 0
	}
	return max(every-now.Sub(c.at), 0)
}

// passed records that Weaviate confirmed obj's collection and alias at now.
func (d *driftChecks) passed(obj client.Object, collection, alias string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last == nil {
		d.last = map[types.NamespacedName]driftCheck{}
	}
	d.last[client.ObjectKeyFromObject(obj)] = driftCheck{uid: obj.GetUID(), collection: collection, alias: alias, at: now}
}

// forget drops the check of an Index that is gone or being deleted.
func (d *driftChecks) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, key)
}
