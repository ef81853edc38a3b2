package controllers

// Model servers: one Deployment and Service (with a NetworkPolicy and, above one replica, a
// PodDisruptionBudget) per (model folder, precision) in an Index's namespace, shared by every
// kept revision of every Index there that needs it. The name depends only on what a
// revision's vectors depend on (its recorded model and precision), so the URL a collection is
// wired to stays valid for the revision's lifetime; the device, a spec.serving.precision
// override, replicas, resources and scheduling are settings of the Deployment (those of the
// oldest Index that uses it) and change it in place.
//
// Lifetime without a finalizer: every object of a server carries an owner reference (not a
// controller reference) to each Index that needs it, rewritten on every reconcile of any
// Index in the namespace from the Indexes' kept revisions. A server no Index needs any more
// (revisions pruned, model changed, serving disabled) is deleted by that reconcile; one whose
// last Index is deleted is deleted by Kubernetes' garbage collector once its last owner is
// gone. Reads go to the API server (Options.APIReader), so the manager caches no Deployments.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete

// Reasons of the ServingReady condition.
const (
	// ReasonModelServerReady: the model server has ready replicas.
	ReasonModelServerReady = "ModelServerReady"
	// ReasonModelServerNotReady: the model server has no ready replica yet (or any more).
	ReasonModelServerNotReady = "ModelServerNotReady"
	// ReasonTransformersModuleMissing: Weaviate lacks the text2vec-transformers module, so
	// collections are built without a vectorizer (nearText through the alias fails).
	ReasonTransformersModuleMissing = "TransformersModuleMissing"
	// ReasonModelHashMismatch: the model server loaded another model folder than the
	// revision's; the revision is not wired to it and does not take the alias.
	ReasonModelHashMismatch = "ModelHashMismatch"
)

// componentModelServer is the app.kubernetes.io/component label of model server objects.
const componentModelServer = "model-server"

// annotationSpecHash on a model server object is the hash of what the controller last wrote;
// an object whose hash differs from the desired one is updated.
const annotationSpecHash = "ragops.dev/spec-hash"

// servingGrace is how long a model server is kept after its creation even when no Index
// seems to need it: another Index's reconcile may have created it for a revision not yet in
// that Index's written status.
var servingGrace = time.Minute

// servingKey is what a model server serves: a model folder in the precision a revision was
// embedded in.
type servingKey struct {
	Model     ragopsv1alpha1.ModelSpec `json:"model"`
	Precision ragopsv1alpha1.Precision `json:"precision"`
}

// name is the server's object name: ragops-serve- and 10 hex digits of the key's hash.
func (k servingKey) name() string { return "ragops-serve-" + hashJSON(k)[:10] }

// servingKeyFor is the model server of revision rev of idx (nil: the desired revision before
// its status exists): the revision's model and precision.
func servingKeyFor(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) servingKey {
	model, e := idx.Spec.Model, idx.Spec.Embedder
	if rev != nil {
		model, e = queryModel(idx, rev)
	}
	k := servingKey{Model: model, Precision: e.Precision}
	if k.Precision == "" {
		k.Precision = ragopsv1alpha1.PrecisionFP32
	}
	return k
}

// servingEndpoint is the base URL of a model server's Service.
func servingEndpoint(namespace string, k servingKey) string {
	s := specs.Server{Name: k.name(), Namespace: namespace}
	return s.Endpoint()
}

// Values of Options.ModelServerURLs.
const (
	ModelServerServiceDNS = "ServiceDNS"
	ModelServerClusterIP  = "ClusterIP"
)

// serverURL is the base URL a model server is addressed by (Options.ModelServerURLs): its
// Service's DNS name, or its ClusterIP ("" while the Service or its ClusterIP does not exist).
func (r *IndexReconciler) serverURL(ctx context.Context, namespace string, k servingKey) (string, error) {
	if r.Options.ModelServerURLs != ModelServerClusterIP {
		return servingEndpoint(namespace, k), nil
	}
	var svc corev1.Service
	err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: namespace, Name: k.name()}, &svc)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		return "http://" + net.JoinHostPort(ip, strconv.Itoa(specs.Port)), nil
	}
	return "", nil
}

// servingNeeds returns the model servers idx needs, by name: those of its kept revisions
// (Failed and Superseded ones have no collection to serve) and of its desired revision.
// A deleting Index or one with serving disabled needs none.
func servingNeeds(idx *ragopsv1alpha1.Index, desired string) map[string]servingKey {
	needs := map[string]servingKey{}
	if !idx.DeletionTimestamp.IsZero() || !idx.Spec.Serving.ServingEnabled() {
		return needs
	}
	haveDesired := false
	for i := range idx.Status.Revisions {
		rev := &idx.Status.Revisions[i]
		if rev.Phase == ragopsv1alpha1.RevisionFailed || rev.Phase == ragopsv1alpha1.RevisionSuperseded {
			continue
		}
		haveDesired = haveDesired || rev.Name == desired
		k := servingKeyFor(idx, rev)
		needs[k.name()] = k
	}
	if !haveDesired && desired != "" {
		k := servingKeyFor(idx, nil)
		needs[k.name()] = k
	}
	return needs
}

// transformersModules remembers, per Weaviate URL, whether the server has the
// text2vec-transformers module (as the serving step last read it), for the build step's plan.
// It is read again after a minute.
var transformersModules sync.Map // URL -> moduleAnswer

// moduleAnswer is one reading of a Weaviate's modules.
type moduleAnswer struct {
	has bool
	at  time.Time
}

// moduleStore is a Store that lists Weaviate's modules and reads a collection's settings
// (vectorstore.Store does).
type moduleStore interface {
	Modules(ctx context.Context) ([]string, error)
	Collection(ctx context.Context, name string) (vectorstore.CollectionInfo, error)
}

// unwrapStore returns the Store behind the manager's instrumenting wrapper.
func unwrapStore(s Store) Store {
	for {
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// reconcileServing runs the model servers the namespace's Indexes need, deletes those none
// needs, and reports the server of the revision behind the alias (of the desired revision
// while none serves) in status.serving and the ServingReady condition. It never stops the
// reconcile; while that server is not ready it looks again after ProgressInterval.
func (r *IndexReconciler) reconcileServing(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	var list ragopsv1alpha1.IndexList
	if err := r.List(ctx, &list, client.InNamespace(idx.Namespace)); err != nil {
		return reconcile.Stop, err
	}
	// Which Indexes need which servers: this one from its status in hand, the others as
	// their last reconcile wrote it.
	users := map[string][]*ragopsv1alpha1.Index{}
	keys := map[string]servingKey{}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == idx.UID {
			other = idx
		}
		for name, k := range servingNeeds(other, other.Status.Revision) {
			users[name] = append(users[name], other)
			keys[name] = k
		}
	}
	reader := r.Options.reader(r.Client)
	var deps appsv1.DeploymentList
	if err := reader.List(ctx, &deps, client.InNamespace(idx.Namespace),
		client.MatchingLabels{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: componentModelServer}); err != nil {
		return reconcile.Stop, err
	}
	names := map[string]bool{}
	for name := range servingNeeds(idx, st.revision) {
		names[name] = true
	}
	existing := map[string]*appsv1.Deployment{}
	for i, d := range deps.Items {
		existing[d.Name] = &deps.Items[i]
		names[d.Name] = true
		if len(users[d.Name]) == 0 && time.Since(d.CreationTimestamp.Time) > servingGrace {
			if err := r.deleteServer(ctx, idx.Namespace, d.Name); err != nil {
				return reconcile.Stop, err
			}
			log.FromContext(ctx).Info("model server deleted: no kept revision needs it", "deployment", d.Name)
			delete(names, d.Name)
		}
	}
	raced := false
	for name := range names {
		if len(users[name]) == 0 {
			continue // created moments ago for a revision not yet recorded
		}
		err := r.ensureServer(ctx, keys[name], users[name], existing[name])
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			// The reconcile of another Index that shares the server wrote it meanwhile: the
			// next look, on a fresh read, finds what it wrote.
			log.FromContext(ctx).V(1).Info("model server written by another reconcile; looking again", "server", name, "error", err.Error())
			raced = true
			continue
		}
		if err != nil {
			return reconcile.Stop, err
		}
	}
	res := r.servingStatus(ctx, st)
	if raced && (res.RequeueAfter == 0 || res.RequeueAfter > reconcile.ConflictRequeue) {
		res.RequeueAfter = reconcile.ConflictRequeue
	}
	return res, nil
}

// annotationSetHash on a model server Deployment hashes all of the server's desired objects:
// a Deployment that carries the desired one needs no further reads or writes.
const annotationSetHash = "ragops.dev/set-hash"

// ensureServer creates or updates a model server's objects, owned by every Index in users;
// replicas, resources and scheduling come from the oldest of them. listed is the server's
// Deployment as listed (nil when none).
func (r *IndexReconciler) ensureServer(ctx context.Context, k servingKey, users []*ragopsv1alpha1.Index, listed *appsv1.Deployment) error {
	slices.SortFunc(users, func(a, b *ragopsv1alpha1.Index) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	first := users[0]
	var owners []metav1.OwnerReference
	weaviateNS := map[string]bool{}
	for _, u := range users {
		owners = append(owners, metav1.OwnerReference{APIVersion: ragopsv1alpha1.GroupVersion.String(), Kind: "Index", Name: u.Name, UID: u.UID})
		if ns, ok := specs.WeaviateNamespace(u.Spec.Weaviate.URL, u.Namespace); ok {
			weaviateNS[ns] = true
		}
	}
	slices.SortFunc(owners, func(a, b metav1.OwnerReference) int { return strings.Compare(string(a.UID), string(b.UID)) })
	w := &workload.Workload{Owner: first, Image: r.Options.WorkerImage}
	modelDir := w.MountModel("model", plan.ModelDir, k.Model, w.Image)
	sv := first.Spec.Serving
	device, precision := sv.Device, k.Precision
	if device == "" {
		device = ragopsv1alpha1.DeviceCPU
	}
	if sv.Precision != "" {
		precision = sv.Precision
	}
	srv := specs.Server{
		Name: k.name(), Namespace: first.Namespace,
		Labels: map[string]string{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: componentModelServer},
		Owners: owners, Image: r.Options.WorkerImage, ModelDir: modelDir,
		Volumes: w.Volumes, Mounts: w.Mounts, Init: w.Init,
		Device: string(device), Precision: string(precision), Replicas: max(sv.Replicas, 1),
		Resources: sv.Resources, NodeSelector: sv.NodeSelector, Tolerations: sv.Tolerations,
		ManagerNamespace: r.Options.ManagerNamespace,
		WeaviateNamespaces: slices.Sorted(func(yield func(string) bool) {
			for ns := range weaviateNS {
				if !yield(ns) {
					return
				}
			}
		}),
	}
	dep := srv.Deployment()
	workload.RestrictPod(&dep.Spec.Template.Spec)
	objs := []client.Object{srv.Service(), srv.NetworkPolicy()}
	pdb := srv.PodDisruptionBudget()
	if pdb != nil {
		objs = append(objs, pdb)
	}
	setHash := hashJSON([]any{dep, objs})[:16]
	if listed != nil && listed.Annotations[annotationSetHash] == setHash {
		return nil
	}
	if pdb == nil {
		if err := r.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: srv.Namespace, Name: srv.Name}}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	// The Deployment last: its set hash says the others are written.
	dep.Annotations = map[string]string{annotationSetHash: setHash}
	objs = append(objs, dep)
	for _, o := range objs {
		if err := r.ensureObject(ctx, o); err != nil {
			return fmt.Errorf("model server %s: %w", srv.Name, err)
		}
	}
	return nil
}

// ensureObject creates desired, or updates the existing object when what the controller last
// wrote (annotationSpecHash) differs. A Service keeps its allocated cluster IPs.
func (r *IndexReconciler) ensureObject(ctx context.Context, desired client.Object) error {
	hash := hashJSON(desired)[:16]
	ann := desired.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotationSpecHash] = hash
	desired.SetAnnotations(ann)
	existing := desired.DeepCopyObject().(client.Object)
	err := r.Options.reader(r.Client).Get(ctx, client.ObjectKeyFromObject(desired), existing)
	if apierrors.IsNotFound(err) {
		return r.Create(ctx, desired)
	}
	if err != nil {
		return err
	}
	if existing.GetAnnotations()[annotationSpecHash] == hash {
		return nil
	}
	desired.SetResourceVersion(existing.GetResourceVersion())
	if svc, ok := desired.(*corev1.Service); ok {
		old := existing.(*corev1.Service)
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
		svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy = old.Spec.IPFamilies, old.Spec.IPFamilyPolicy
	}
	return r.Update(ctx, desired)
}

// deleteServer deletes a model server's objects (those already gone are skipped).
func (r *IndexReconciler) deleteServer(ctx context.Context, ns, name string) error {
	om := metav1.ObjectMeta{Namespace: ns, Name: name}
	for _, o := range []client.Object{&appsv1.Deployment{ObjectMeta: om}, &corev1.Service{ObjectMeta: om},
		&networkingv1.NetworkPolicy{ObjectMeta: om}, &policyv1.PodDisruptionBudget{ObjectMeta: om}} {
		if err := r.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

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
// the model hash from its /meta; one other than wantHash (when set: the content hash of the
// folder a revision was built with) is a problem.
func (r *IndexReconciler) readServer(ctx context.Context, ns string, k servingKey, wantHash string) (serverState, error) {
	url, err := r.serverURL(ctx, ns, k)
	if err != nil {
		return serverState{name: k.name()}, err
	}
	s := serverState{name: k.name(), endpoint: url}
	var dep appsv1.Deployment
	err = r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: ns, Name: s.name}, &dep)
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
		if h, err := serverModelHash(ctx, s.endpoint); err == nil {
			s.modelHash = h
		} else {
			log.FromContext(ctx).V(1).Info("model server /meta not read", "endpoint", s.endpoint, "error", err.Error())
		}
	}
	if wantHash != "" && s.modelHash != "" && s.modelHash != wantHash {
		s.problem = fmt.Sprintf("model server %s loaded a model folder with hash %s, the revision was built with %s: not wired", s.name, s.modelHash, wantHash)
	}
	return s, nil
}

// serverModelHash reads a model server's /meta (its modelHash); a variable so tests can point
// it at a server on the local host.
var serverModelHash = func(ctx context.Context, endpoint string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/meta", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/meta: %s", endpoint, resp.Status)
	}
	var m struct {
		ModelHash string `json:"modelHash"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&m); err != nil {
		return "", fmt.Errorf("GET %s/meta: %w", endpoint, err)
	}
	return m.ModelHash, nil
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
	k := servingKeyFor(idx, rev)
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

// moduleMissing says what to set on a Weaviate without text2vec-transformers.
func moduleMissing(url, endpoint string) string {
	m := vectorstore.ModuleTransformers
	return fmt.Sprintf("Weaviate at %s lacks the %s module, so revisions are built without a vectorizer and nearText through the alias fails: "+
		"set ENABLE_MODULES=%s (beside any modules it lists), TRANSFORMERS_INFERENCE_API=%s (any URL; collections name their own) and "+
		"TRANSFORMERS_WAIT_FOR_STARTUP=false on Weaviate, and let it reach the model-server Services; revisions built meanwhile keep no vectorizer (the next revision gets one)", url, m, m, endpoint)
}

// weaviateHasTransformers asks Weaviate whether it has the text2vec-transformers module and
// remembers the answer for the build step. A Store that cannot tell answers an error.
func (r *IndexReconciler) weaviateHasTransformers(ctx context.Context, st *indexState) (bool, error) {
	url := st.idx.Spec.Weaviate.URL
	if v, ok := transformersModules.Load(url); ok && time.Since(v.(moduleAnswer).at) < time.Minute {
		return v.(moduleAnswer).has, nil
	}
	ms, ok := unwrapStore(st.store).(moduleStore)
	if !ok {
		return false, fmt.Errorf("the store does not list modules")
	}
	mods, err := ms.Modules(ctx)
	if err != nil {
		return false, err
	}
	has := slices.Contains(mods, vectorstore.ModuleTransformers)
	transformersModules.Store(url, moduleAnswer{has: has, at: time.Now()})
	return has, nil
}

// modelServerFor is the model server URL a revision's new collection is wired to (plan
// modelServer), or "" when serving is disabled or Weaviate lacks the module (as last read).
// Errors: with ModelServerClusterIP, the server's Service has no ClusterIP yet (retried).
func (r *IndexReconciler) modelServerFor(ctx context.Context, idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus) (string, error) {
	if !idx.Spec.Serving.ServingEnabled() {
		return "", nil
	}
	if v, ok := transformersModules.Load(idx.Spec.Weaviate.URL); !ok || !v.(moduleAnswer).has {
		return "", nil
	}
	k := servingKeyFor(idx, rev)
	url, err := r.serverURL(ctx, idx.Namespace, k)
	if err == nil && url == "" {
		err = fmt.Errorf("model server Service %s/%s has no ClusterIP yet", idx.Namespace, k.name())
	}
	return url, err
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
		return reconcile.Proceed, false
	}
	k := servingKeyFor(st.idx, rev)
	s, err := r.readServer(ctx, st.idx.Namespace, k, revModelHash(rev))
	switch {
	case err != nil:
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressing, ReasonModelServerNotReady, fmt.Sprintf("revision %s: model server %s not read: %v", rev.Name, k.name(), err)), true
	case s.endpoint != info.Vectorizer.QueryURL:
		msg := fmt.Sprintf("revision %s: collection %s queries through %s, not its model server %s; it does not take the alias", rev.Name, rev.Collection, info.Vectorizer.QueryURL, s.endpoint)
		return reconcile.Stalled(ReasonModelHashMismatch, msg).Requeue(jitter(r.Options.DriftInterval)), true
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

// revModelHash is the content hash of the model folder a revision was built with ("" when
// not recorded).
func revModelHash(rev *ragopsv1alpha1.RevisionStatus) string {
	if rev == nil {
		return ""
	}
	return rev.ModelHash
}
