package controllers

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/internal/workload"
)

// syncQueue bounds how many corpus sync Jobs run at once across all Indexes
// (Options.MaxConcurrentSyncs) and admits the revisions that wait for one in the order they
// started waiting (oldest first), so an Index that reconciles often cannot starve one that
// reconciles rarely. The running syncs are counted from the Jobs themselves (every unfinished
// sync Job ragops manages, deleting ones included: their pods may still write), plus the
// Jobs this manager admitted that its cache does not list yet; the queue itself lives in
// memory: after a manager restart the waiting revisions queue again as they reconcile.
type syncQueue struct {
	mu sync.Mutex
	// waiting holds, per revision ("namespace/index/revision"), when it started waiting and
	// when it last asked.
	waiting map[string]waiter
	// admitted holds the Jobs admitted ("namespace/name") until the cache lists them.
	admitted map[string]time.Time
}

type waiter struct{ since, seen time.Time }

// admittedGrace bounds how long an admitted Job counts without the cache listing it (its
// creation failed, or the cache lags that much).
const admittedGrace = time.Minute

// admit reports whether the sync Job job of revision key may be created now: listed are the
// sync Jobs the cache lists, true for the unfinished ones; limit is the bound. A revision not admitted waits
// (ahead is how many wait before it); it must ask again within stale, or it loses its
// place (an Index deleted or synced meanwhile).
func (q *syncQueue) admit(key, job string, listed map[string]bool, limit int, stale time.Duration, now time.Time) (ok bool, busy, ahead int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiting == nil {
		q.waiting, q.admitted = map[string]waiter{}, map[string]time.Time{}
	}
	for _, unfinished := range listed {
		if unfinished {
			busy++
		}
	}
	for j, at := range q.admitted {
		_, seen := listed[j]
		switch {
		case seen:
			delete(q.admitted, j) // counted above when it runs
		case now.Sub(at) > admittedGrace:
			delete(q.admitted, j)
		default:
			busy++
		}
	}
	for k, w := range q.waiting {
		if now.Sub(w.seen) > stale {
			delete(q.waiting, k)
		}
	}
	w, ok := q.waiting[key]
	if !ok {
		w.since = now
	}
	w.seen = now
	q.waiting[key] = w
	order := make([]string, 0, len(q.waiting))
	for k := range q.waiting {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := q.waiting[order[i]], q.waiting[order[j]]
		if !a.since.Equal(b.since) {
			return a.since.Before(b.since)
		}
		return order[i] < order[j]
	})
	for i, k := range order {
		if k == key {
			ahead = i
		}
	}
	if ahead < limit-busy {
		delete(q.waiting, key)
		q.admitted[job] = now
		return true, busy, 0
	}
	return false, busy, ahead
}

// leave drops revision key from the queue (it needs no sync now).
func (q *syncQueue) leave(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.waiting, key)
}

// syncSlot decides whether the sync Job name of rev (not created yet) may start under
// Options.MaxConcurrentSyncs (0: no bound). When it may not, msg says why it waits.
func (r *IndexReconciler) syncSlot(ctx context.Context, st *indexState, revName, name string) (ok bool, msg string, err error) {
	limit := r.Options.MaxConcurrentSyncs
	if limit <= 0 {
		return true, "", nil
	}
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.MatchingLabels{workload.LabelManagedBy: workload.ManagedBy, workload.LabelJobKind: workload.JobKindSync}); err != nil {
		return false, "", err
	}
	listed := map[string]bool{}
	for i := range list.Items {
		j := &list.Items[i]
		s, _ := workload.StateOf(j)
		listed[j.Namespace+"/"+j.Name] = s == workload.Running
	}
	key := st.idx.Namespace + "/" + st.idx.Name + "/" + revName
	stale := 3*r.Options.ProgressInterval + 30*time.Second
	ok, busy, ahead := r.syncs.admit(key, st.idx.Namespace+"/"+name, listed, limit, stale, time.Now())
	if ok {
		return true, "", nil
	}
	return false, fmt.Sprintf("waiting to sync corpus revision %s into revision %s: %d of at most %d corpus syncs run (--max-concurrent-syncs), %d revision(s) waiting before this one",
		st.corpus.Status.Revision, revName, busy, limit, ahead), nil
}
