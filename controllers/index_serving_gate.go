package controllers

// Rollout gating on model servers: the server a revision's collection queries through, its readiness and model hash, status.serving and ServingReady.

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
)

// serverState is what the controller knows of one model server.
type serverState struct {
	name, endpoint string
	ready, want    int32
	// modelHash is what the server's /meta reports ("" until read).
	modelHash string
	// problem explains a ready server that is not usable (another model's hash).
	problem string
}

// readServer reads the Deployment of the server with key k and, once it has ready replicas,
// the model hash from its /meta (modelHashCache: once per change of the Deployment); one other than wantHash (when set: the content hash of the
// folder a revision was built with) is a problem.
func (r *IndexReconciler) readServer(ctx context.Context, ns string, k servingKey, wantHash string) (serverState, error) {
	url, err := r.serverURL(ctx, ns, k)
	if err != nil {
		return serverState{name: k.name()}, err
	}
	s := serverState{name: k.name(), endpoint: url}
	var dep appsv1.Deployment
	err = r.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.name}, &dep) // cached (ScopeCache)
	if apierrors.IsNotFound(err) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.ready, s.want = dep.Status.ReadyReplicas, ptr.Deref(dep.Spec.Replicas, 1)
	if s.endpoint == "" {
		s.ready = 0 // its Service (ClusterIP) is not there yet: not addressable
	}
	if s.ready > 0 {
		if h, ok := r.hashes.load(s.endpoint, dep.ResourceVersion, r.Options.DriftInterval, time.Now()); ok {
			s.modelHash = h
		} else if h, err := r.Options.modelServers().ModelHash(ctx, s.endpoint); err == nil {
			s.modelHash = h
			r.hashes.store(s.endpoint, dep.ResourceVersion, h, time.Now())
		} else {
			log.FromContext(ctx).V(1).Info("model server /meta not read", "endpoint", s.endpoint, "error", err.Error())
		}
	}
	if wantHash != "" && s.modelHash != "" && s.modelHash != wantHash {
		s.problem = fmt.Sprintf("model server %s loaded a model folder with hash %s, the revision was built with %s: not wired", s.name, s.modelHash, wantHash)
	}
	return s, nil
}

// servingStatus fills status.serving and ServingReady from the server of the revision behind
// the alias (the desired revision while none serves), and records whether Weaviate has the
// text2vec-transformers module.
func (r *IndexReconciler) servingStatus(ctx context.Context, st *indexState) reconcile.Result {
	idx := st.idx
	if !idx.Spec.Serving.ServingEnabled() {
		idx.Status.Serving = nil
		return reconcile.Proceed.Remove(ragopsv1alpha1.ConditionServingReady)
	}
	revName := idx.Status.ActiveRevision
	rev := findRevision(idx, revName)
	if rev == nil {
		revName, rev = st.revision, findRevision(idx, st.revision)
	}
	k := servingKeyFor(idx, rev, r.Options.WorkerImage)
	s, err := r.readServer(ctx, idx.Namespace, k, revModelHash(rev))
	if err != nil {
		log.FromContext(ctx).Info("model server not read", "deployment", k.name(), "error", err.Error())
		return reconcile.ProceedFor(r.Options.ProgressInterval)
	}
	idx.Status.Serving = &ragopsv1alpha1.ServingStatus{Endpoint: s.endpoint, Deployment: s.name, Revision: revName,
		ReadyReplicas: s.ready, ModelHash: s.modelHash}
	hasModule, moduleErr := r.weaviateHasTransformers(ctx, st)
	status, reason := metav1.ConditionTrue, ReasonModelServerReady
	msg := fmt.Sprintf("model server %s of revision %s: %d/%d replicas ready at %s", s.name, revName, s.ready, s.want, s.endpoint)
	res := reconcile.Proceed
	switch {
	case s.problem != "":
		status, reason, msg = metav1.ConditionFalse, ReasonModelHashMismatch, s.problem
	case s.ready == 0:
		status, reason = metav1.ConditionFalse, ReasonModelServerNotReady
		res = reconcile.ProceedFor(r.Options.ProgressInterval)
	}
	if moduleErr == nil && !hasModule && s.problem == "" {
		// A ready server that Weaviate never calls does not serve the alias's queries.
		status, reason, msg = metav1.ConditionFalse, ReasonTransformersModuleMissing, moduleMissing(idx.Spec.Weaviate.URL, s.endpoint)+" ("+msg+")"
	}
	return res.Set(ragopsv1alpha1.ConditionServingReady, status, reason, msg)
}

// awaitServing holds a revision back from the alias while the model server its collection
// is wired to has no ready replica, or serves another model folder. A collection without a
// vectorizer (Weaviate without the module, serving disabled, built before) does not wait.
func (r *IndexReconciler) awaitServing(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus) (reconcile.Result, bool) {
	ms, ok := unwrapStore(st.store).(moduleStore)
	if !ok {
		return reconcile.Proceed, false
	}
	info, err := ms.Collection(ctx, rev.Collection)
	if err != nil {
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeRetrying, ReasonWeaviateError, fmt.Sprintf("read collection %s: %v", rev.Collection, err)), true
	}
	if info.Vectorizer.QueryURL == "" {
		return r.awaitUnwired(ctx, st, ms, rev)
	}
	k := servingKeyFor(st.idx, rev, r.Options.WorkerImage)
	s, err := r.readServer(ctx, st.idx.Namespace, k, revModelHash(rev))
	switch {
	case err != nil:
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonModelServerNotReady, fmt.Sprintf("revision %s: model server %s not read: %v", rev.Name, k.name(), err)), true
	case s.endpoint == "" || !wiredTo(info.Vectorizer, s.endpoint):
		msg := fmt.Sprintf("revision %s: collection %s queries through %s, not its model server %s; it does not take the alias", rev.Name, rev.Collection, info.Vectorizer.QueryURL, s.endpoint)
		return reconcile.Stalled(ReasonModelServerURLMismatch, msg).Requeue(jitter(r.Options.DriftInterval)), true
	case s.problem != "":
		// The build step may have recorded the revision's hash after the serving step ran:
		// status.serving and ServingReady say what this read found, together.
		if sv := st.idx.Status.Serving; sv != nil && sv.Deployment == s.name {
			sv.ReadyReplicas, sv.ModelHash = s.ready, s.modelHash
		}
		// Looked at again: the folder may be fixed and the server restarted.
		return reconcile.Stalled(ReasonModelHashMismatch, fmt.Sprintf("revision %s does not take the alias: %s", rev.Name, s.problem)).Requeue(jitter(r.Options.DriftInterval)).
			Set(ragopsv1alpha1.ConditionServingReady, metav1.ConditionFalse, ReasonModelHashMismatch, s.problem), true
	case s.ready == 0:
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonModelServerNotReady,
			fmt.Sprintf("revision %s waits for its model server %s (0/%d replicas ready) before it takes the alias", rev.Name, s.name, s.want)), true
	}
	return reconcile.Proceed, false
}

// wiredTo reports whether a collection's vectorizer queries the model server at endpoint: its
// query path (specs.QueryURL), or the server's base URL (collections built before the query
// path existed).
func wiredTo(v vectorstore.Transformers, endpoint string) bool {
	return v.QueryURL == specs.QueryURL(endpoint) || v.QueryURL == endpoint
}

// awaitUnwired holds back a revision whose collection has no vectorizer while serving is on
// and the active revision's collection has one: moving the alias would break every nearText
// client. It does not move by itself: the revision is not rebuilt (its collection keeps what
// it was created with).
func (r *IndexReconciler) awaitUnwired(ctx context.Context, st *indexState, ms moduleStore, rev *ragopsv1alpha1.RevisionStatus) (reconcile.Result, bool) {
	idx := st.idx
	active := findRevision(idx, idx.Status.ActiveRevision)
	if !idx.Spec.Serving.ServingEnabled() || active == nil || active.Name == rev.Name {
		return reconcile.Proceed, false
	}
	info, err := ms.Collection(ctx, active.Collection)
	if err != nil {
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeRetrying, ReasonWeaviateError, fmt.Sprintf("read collection %s: %v", active.Collection, err)), true
	}
	if info.Vectorizer.QueryURL == "" {
		return reconcile.Proceed, false
	}
	msg := fmt.Sprintf("revision %s does not take the alias: its collection %s has no vectorizer, while the active revision %s's collection queries through the model server at %s, "+
		"so nearText through the alias would fail; set spec.serving.enabled=false to roll out without model servers, or change the spec so that a new revision is built with its model server",
		rev.Name, rev.Collection, active.Name, info.Vectorizer.QueryURL)
	return reconcile.Stalled(ReasonModelServerNotWired, msg).Requeue(jitter(r.Options.DriftInterval)), true
}

// revModelHash is the content hash of the model folder a revision was built with ("" when
// not recorded).
func revModelHash(rev *ragopsv1alpha1.RevisionStatus) string {
	if rev == nil {
		return ""
	}
	return rev.ModelHash
}
