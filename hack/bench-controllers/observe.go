package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/workload"
)

// indexTimes are the moments one Index passed through, as this process saw them.
type indexTimes struct {
	created     time.Time // just before the Create call
	firstStatus time.Time // first watch event whose status differs from the empty status
	jobCreated  time.Time // the build Job appeared
	playStart   time.Time // a player picked the build Job up
	jobDone     time.Time // the player marked the build Job Complete
	ready       time.Time // Ready=True for the current generation
	// writesAfterReady counts status changes seen after ready.
	writesAfterReady int
}

// statusWrite is one observed status change.
type statusWrite struct {
	at   time.Time
	kind string
}

// recorder watches Indexes, Corpora, ChunkingStrategies and Jobs in one namespace through
// informers and records when statuses change; new embed Jobs go to jobs.
type recorder struct {
	mu      sync.Mutex
	indexes map[string]*indexTimes
	writes  []statusWrite
	ready   int
	jobs    chan client.ObjectKey
	// served is, per Index, the corpus revision its active revision holds.
	served map[string]string
}

func newRecorder(n int) *recorder {
	return &recorder{indexes: make(map[string]*indexTimes, n), jobs: make(chan client.ObjectKey, 4*n+16), served: make(map[string]string, n)}
}

// created registers an Index about to be created.
func (r *recorder) created(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.indexes[name] = &indexTimes{created: at}
}

func (r *recorder) playStart(index string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.indexes[index]; t != nil && t.playStart.IsZero() {
		t.playStart = at
	}
}

// jobCounts returns how many build Jobs appeared and how many the players completed.
func (r *recorder) jobCounts() (created, done int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.indexes {
		if !t.jobCreated.IsZero() {
			created++
		}
		if !t.jobDone.IsZero() {
			done++
		}
	}
	return created, done
}

func (r *recorder) jobDone(index string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.indexes[index]; t != nil && t.jobDone.IsZero() {
		t.jobDone = at
	}
}

// readyCount returns how many registered Indexes reached Ready.
func (r *recorder) readyCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

// writesBetween counts status changes per kind in [from, to).
func (r *recorder) writesBetween(from, to time.Time) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, w := range r.writes {
		if !w.at.Before(from) && w.at.Before(to) {
			out[w.kind]++
		}
	}
	return out
}

// snapshot returns a copy of the per-Index times.
func (r *recorder) snapshot() []indexTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]indexTimes, 0, len(r.indexes))
	for _, t := range r.indexes {
		out = append(out, *t)
	}
	return out
}

// servedCount returns how many Indexes' active revisions hold corpus revision rev.
func (r *recorder) servedCount(rev string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.served {
		if v == rev {
			n++
		}
	}
	return n
}

func (r *recorder) onIndex(old, cur *ragopsv1alpha1.Index) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rev := range cur.Status.Revisions {
		if rev.Name == cur.Status.ActiveRevision {
			r.served[cur.Name] = rev.CorpusRevision
		}
	}
	changed := old == nil && !equality.Semantic.DeepEqual(cur.Status, ragopsv1alpha1.IndexStatus{}) ||
		old != nil && !equality.Semantic.DeepEqual(old.Status, cur.Status)
	if !changed {
		return
	}
	r.writes = append(r.writes, statusWrite{at: now, kind: "Index"})
	t := r.indexes[cur.Name]
	if t == nil {
		return
	}
	if t.firstStatus.IsZero() {
		t.firstStatus = now
	}
	if !t.ready.IsZero() {
		t.writesAfterReady++
		return
	}
	if conditions.IsReady(cur) {
		t.ready = now
		r.ready++
	}
}

func (r *recorder) onStatus(kind string, changed bool) {
	if !changed {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, statusWrite{at: now, kind: kind})
}

func (r *recorder) onJob(job *batchv1.Job) {
	if job.Labels[workload.LabelComponent] != "embed" {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if t := r.indexes[job.Labels[workload.LabelOwner]]; t != nil && t.jobCreated.IsZero() {
		t.jobCreated = now
	}
	r.mu.Unlock()
	r.jobs <- client.ObjectKeyFromObject(job)
}

// start runs informers for the namespace and returns once they have synced.
func (r *recorder) start(ctx context.Context, cfg *rest.Config, ns string) error {
	c, err := cache.New(cfg, cache.Options{Scheme: cmd.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return err
	}
	add := func(obj client.Object, h toolscache.ResourceEventHandlerFuncs) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		_, err = inf.AddEventHandler(h)
		return err
	}
	if err := add(&ragopsv1alpha1.Index{}, toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.onIndex(nil, o.(*ragopsv1alpha1.Index)) },
		UpdateFunc: func(o, n any) { r.onIndex(o.(*ragopsv1alpha1.Index), n.(*ragopsv1alpha1.Index)) },
	}); err != nil {
		return err
	}
	if err := add(&ragopsv1alpha1.Corpus{}, toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		r.onStatus("Corpus", !equality.Semantic.DeepEqual(o.(*ragopsv1alpha1.Corpus).Status, n.(*ragopsv1alpha1.Corpus).Status))
	}}); err != nil {
		return err
	}
	if err := add(&ragopsv1alpha1.ChunkingStrategy{}, toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		r.onStatus("ChunkingStrategy", !equality.Semantic.DeepEqual(o.(*ragopsv1alpha1.ChunkingStrategy).Status, n.(*ragopsv1alpha1.ChunkingStrategy).Status))
	}}); err != nil {
		return err
	}
	if err := add(&batchv1.Job{}, toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) { r.onJob(o.(*batchv1.Job)) }}); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("benchmark informers did not sync")
	}
	return nil
}
