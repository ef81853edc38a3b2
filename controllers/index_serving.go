package controllers

// Model servers: one Deployment and Service (with a NetworkPolicy and, above one replica, a
// PodDisruptionBudget) per (model folder, precision, and for an imagePath model the image it
// was built from) in an Index's namespace, shared by every kept revision of every Index there
// that needs it. The name depends only on what a revision's vectors depend on (its recorded
// model, precision and server image), so the URL a collection is wired to stays valid for the
// revision's lifetime, and an operator upgrade does not change the model a kept revision's
// queries are embedded with. The device, replicas, resources and scheduling are settings of
// the Deployment (those of the oldest Index that uses it; the ServingSettingsApplied condition
// of every other Index says where its own differ) and change it in place; a
// spec.serving.precision override applies only when every Index sharing the server asks the
// same one. A Deployment a HorizontalPodAutoscaler scales keeps the autoscaler's replicas.
//
// The rest of the model server code: index_serving_address.go (the URLs collections are wired
// to), index_serving_client.go (the manager's /meta reads), index_serving_modules.go (whether
// Weaviate has the text2vec-transformers module) and index_serving_gate.go (which revision may
// take the alias, status.serving and ServingReady).
//
// Lifetime without a finalizer: every object of a server carries an owner reference (not a
// controller reference) to each Index that needs it, rewritten on every reconcile of any
// Index in the namespace from the Indexes' kept revisions. A server no Index needs any more
// (revisions pruned, model changed, serving disabled) is deleted by that reconcile; one whose
// last Index is deleted is deleted by Kubernetes' garbage collector once its last owner is
// gone. Reads go to the API server (Options.APIReader), so the manager caches no Deployments.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/serving/specs"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=list

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
	// ReasonModelServerURLMismatch: the revision's collection queries through another URL
	// than its model server's; the revision does not take the alias.
	ReasonModelServerURLMismatch = "ModelServerURLMismatch"
	// ReasonModelServerNotWired: the revision's collection has no vectorizer while the active
	// revision's has one and serving is on; the revision does not take the alias.
	ReasonModelServerNotWired = "ModelServerNotWired"
	// ReasonOwnSettings: the Index's model servers run its spec.serving settings
	// (ServingSettingsApplied True).
	ReasonOwnSettings = "OwnSettings"
	// ReasonSharedServerSettings: a model server the Index shares runs another Index's
	// settings, or not its precision override (ServingSettingsApplied False).
	ReasonSharedServerSettings = "SharedServerSettings"
	// ReasonWeaviateModulesUnknown: whether Weaviate has the text2vec-transformers module is
	// not known yet (its modules could not be read); the build waits.
	ReasonWeaviateModulesUnknown = "WeaviateModulesUnknown"
)

// componentModelServer is the app.kubernetes.io/component label of model server objects.
const componentModelServer = "model-server"

// annotationSpecHash on a model server object is the hash of what the controller last wrote;
// an object whose hash differs from the desired one is updated.
const annotationSpecHash = "ragops.dev/spec-hash"

// servingKey is what a model server serves: a model folder in the precision a revision was
// embedded in; for an imagePath model, from the image the revision recorded (Image; empty
// for other models and for revisions recorded before RevisionStatus.ServerImage, whose
// servers run the operator's current image and keep their names).
type servingKey struct {
	Model     ragopsv1alpha1.ModelSpec `json:"model"`
	Precision ragopsv1alpha1.Precision `json:"precision"`
	Image     string                   `json:"image,omitempty"`
}

// name is the server's object name: ragops-serve- and 10 hex digits of the key's hash.
func (k servingKey) name() string { return "ragops-serve-" + hashJSON(k)[:10] }

// servingKeyFor is the model server of revision rev of idx (nil: the desired revision before
// its status exists, whose server image is image, the operator's): the revision's model,
// precision and server image.
func servingKeyFor(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus, image string) servingKey {
	model, e := idx.Spec.Model, idx.Spec.Embedder
	image = serverImage(model, image)
	if rev != nil {
		model, e = queryModel(idx, rev)
		image = serverImage(model, rev.ServerImage)
	}
	k := servingKey{Model: model, Precision: e.Precision, Image: image}
	if k.Precision == "" {
		k.Precision = ragopsv1alpha1.PrecisionFP32
	}
	return k
}

// serverImage is the image a model server of model runs pinned to: image for an imagePath
// model (the folder is inside it), "" for others.
func serverImage(model ragopsv1alpha1.ModelSpec, image string) string {
	if model.ImagePath == "" {
		return ""
	}
	return image
}

// servingNeeds returns the model servers idx needs, by name: those of its kept revisions
// (Failed and Superseded ones have no collection to serve) and of its desired revision
// (whose server image is image). A deleting Index or one with serving disabled needs none.
func servingNeeds(idx *ragopsv1alpha1.Index, desired, image string) map[string]servingKey {
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
		k := servingKeyFor(idx, rev, image)
		needs[k.name()] = k
	}
	if !haveDesired && desired != "" {
		k := servingKeyFor(idx, nil, image)
		needs[k.name()] = k
	}
	return needs
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
		for name, k := range servingNeeds(other, other.Status.Revision, r.Options.WorkerImage) {
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
	own := servingNeeds(idx, st.revision, r.Options.WorkerImage)
	for name := range own {
		names[name] = true
	}
	addressed := r.addressNeeds(idx, list.Items)
	existing := map[string]*appsv1.Deployment{}
	for i, d := range deps.Items {
		existing[d.Name] = &deps.Items[i]
		names[d.Name] = true
		if len(users[d.Name]) == 0 && time.Since(d.CreationTimestamp.Time) > r.Options.ModelServerGrace {
			if err := r.deleteServer(ctx, idx.Namespace, d.Name, addressed[d.Name]); err != nil {
				return reconcile.Stop, err
			}
			log.FromContext(ctx).Info("model server deleted: no kept revision needs it", "deployment", d.Name, "serviceKept", addressed[d.Name])
			delete(names, d.Name)
		}
	}
	if r.Options.ModelServerURLs == ModelServerClusterIP {
		// Services kept for their address that no kept revision needs any more.
		var svcs corev1.ServiceList
		if err := reader.List(ctx, &svcs, client.InNamespace(idx.Namespace),
			client.MatchingLabels{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: componentModelServer}); err != nil {
			return reconcile.Stop, err
		}
		for _, svc := range svcs.Items {
			if existing[svc.Name] == nil && len(users[svc.Name]) == 0 && !addressed[svc.Name] && time.Since(svc.CreationTimestamp.Time) > r.Options.ModelServerGrace {
				if err := r.deleteServer(ctx, idx.Namespace, svc.Name, false); err != nil {
					return reconcile.Stop, err
				}
			}
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
	if idx.Spec.Serving.ServingEnabled() {
		var notes []string
		for _, name := range slices.Sorted(maps.Keys(own)) {
			if len(users[name]) == 0 {
				continue
			}
			from, precision := settingsFor(users[name])
			if note := settingsConflict(idx, from, precision); note != "" {
				notes = append(notes, fmt.Sprintf("model server %s: %s", name, note))
			}
		}
		if len(notes) == 0 {
			res = res.Set(ragopsv1alpha1.ConditionServingSettingsApplied, metav1.ConditionTrue, ReasonOwnSettings, "the model servers run this Index's spec.serving settings")
		} else {
			res = res.Set(ragopsv1alpha1.ConditionServingSettingsApplied, metav1.ConditionFalse, ReasonSharedServerSettings, strings.Join(notes, "; "))
		}
	} else {
		res = res.Remove(ragopsv1alpha1.ConditionServingSettingsApplied)
	}
	if raced && (res.RequeueAfter == 0 || res.RequeueAfter > reconcile.ConflictRequeue) {
		res.RequeueAfter = reconcile.ConflictRequeue
	}
	return res, nil
}

// annotationSetHash on a model server Deployment hashes all of the server's desired objects:
// a Deployment that carries the desired one needs no further reads or writes.
const annotationSetHash = "ragops.dev/set-hash"

// settingsFor decides what a model server shared by users runs with: the replicas, device,
// resources and scheduling of from, the oldest of them (by creation, then name), and a
// spec.serving.precision override only when every user asks the same one (precision; ""
// serves the precision the revisions were built in), so that one Index's override never
// changes how another's queries are embedded. users is sorted oldest first.
func settingsFor(users []*ragopsv1alpha1.Index) (from *ragopsv1alpha1.Index, precision ragopsv1alpha1.Precision) {
	slices.SortFunc(users, func(a, b *ragopsv1alpha1.Index) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	precision = users[0].Spec.Serving.Precision
	for _, u := range users[1:] {
		if u.Spec.Serving.Precision != precision {
			precision = ""
		}
	}
	return users[0], precision
}

// settingsConflict says where idx's spec.serving differs from what a server runs with
// (settingsFor's from and precision); "" where it does not.
func settingsConflict(idx, from *ragopsv1alpha1.Index, precision ragopsv1alpha1.Precision) string {
	var diffs []string
	want, have := idx.Spec.Serving, from.Spec.Serving
	if idx.UID != from.UID {
		if max(want.Replicas, 1) != max(have.Replicas, 1) {
			diffs = append(diffs, fmt.Sprintf("replicas %d (asks %d)", max(have.Replicas, 1), max(want.Replicas, 1)))
		}
		if deviceOf(want) != deviceOf(have) {
			diffs = append(diffs, fmt.Sprintf("device %s (asks %s)", deviceOf(have), deviceOf(want)))
		}
		if !equality.Semantic.DeepEqual(want.Resources, have.Resources) {
			diffs = append(diffs, "resources")
		}
		if !equality.Semantic.DeepEqual(want.NodeSelector, have.NodeSelector) || !equality.Semantic.DeepEqual(want.Tolerations, have.Tolerations) {
			diffs = append(diffs, "node placement")
		}
	}
	var out []string
	if len(diffs) > 0 {
		out = append(out, fmt.Sprintf("runs with the settings of Index %s, the oldest sharing it: %s", from.Name, strings.Join(diffs, ", ")))
	}
	if want.Precision != "" && want.Precision != precision {
		out = append(out, fmt.Sprintf("precision %s is not applied: not every Index sharing the server asks it, so it serves the precision the revisions were built in", want.Precision))
	}
	return strings.Join(out, "; ")
}

// deviceOf is a spec.serving's device, cpu when unset.
func deviceOf(s ragopsv1alpha1.ServingSpec) ragopsv1alpha1.Device {
	if s.Device == "" {
		return ragopsv1alpha1.DeviceCPU
	}
	return s.Device
}

// ensureServer creates or updates a model server's objects, owned by every Index in users,
// with the settings settingsFor decides. listed is the server's Deployment as listed (nil
// when none).
func (r *IndexReconciler) ensureServer(ctx context.Context, k servingKey, users []*ragopsv1alpha1.Index, listed *appsv1.Deployment) error {
	first, override := settingsFor(users)
	var owners []metav1.OwnerReference
	weaviateNS := map[string]bool{}
	for _, u := range users {
		owners = append(owners, metav1.OwnerReference{APIVersion: ragopsv1alpha1.GroupVersion.String(), Kind: "Index", Name: u.Name, UID: u.UID})
		if ns, ok := specs.WeaviateNamespace(u.Spec.Weaviate.URL, u.Namespace); ok {
			weaviateNS[ns] = true
		}
	}
	slices.SortFunc(owners, func(a, b metav1.OwnerReference) int { return strings.Compare(string(a.UID), string(b.UID)) })
	image := r.Options.WorkerImage
	if k.Image != "" {
		image = k.Image // an imagePath model's folder is in the image its revisions were built from
	}
	w := &workload.Workload{Owner: first, Image: image}
	modelDir := w.MountModel("model", plan.ModelDir, k.Model, w.Image)
	sv := first.Spec.Serving
	device, precision := deviceOf(sv), k.Precision
	if override != "" {
		precision = override
	}
	srv := specs.Server{
		Name: k.name(), Namespace: first.Namespace,
		Labels: map[string]string{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: componentModelServer},
		Owners: owners, Image: image, ModelDir: modelDir,
		Volumes: w.Volumes, Mounts: w.Mounts, Init: w.Init,
		Device: string(device), Precision: string(precision), Replicas: max(sv.Replicas, 1),
		Resources: sv.Resources, NodeSelector: sv.NodeSelector, Tolerations: sv.Tolerations,
		ManagerNamespace: r.Options.ManagerNamespace, Env: otlpEnv(),
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
	autoscaled, err := r.autoscaled(ctx, srv.Namespace, srv.Name)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := r.ensureObject(ctx, o, autoscaled); err != nil {
			return fmt.Errorf("model server %s: %w", srv.Name, err)
		}
	}
	return nil
}

// autoscaled reports whether a HorizontalPodAutoscaler (or KEDA's, which is one) scales the
// Deployment name in ns: its replicas are then the autoscaler's.
func (r *IndexReconciler) autoscaled(ctx context.Context, ns, name string) (bool, error) {
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := r.Options.reader(r.Client).List(ctx, &hpas, client.InNamespace(ns)); err != nil {
		return false, fmt.Errorf("list HorizontalPodAutoscalers: %w", err)
	}
	for _, h := range hpas.Items {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind == "Deployment" && ref.Name == name && strings.HasPrefix(ref.APIVersion, appsv1.GroupName+"/") {
			return true, nil
		}
	}
	return false, nil
}

// ensureObject creates desired, or updates the existing object when what the controller last
// wrote (annotationSpecHash) differs. A Service keeps its allocated cluster IPs; a Deployment
// keeps its replicas when autoscaled.
func (r *IndexReconciler) ensureObject(ctx context.Context, desired client.Object, autoscaled bool) error {
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
	if dep, ok := desired.(*appsv1.Deployment); ok && autoscaled {
		dep.Spec.Replicas = existing.(*appsv1.Deployment).Spec.Replicas
	}
	return r.Update(ctx, desired)
}

// addressNeeds returns, by name, the model servers whose Service (not Deployment) stays
// although no Index needs the server: with ModelServerClusterIP, a collection's URL holds its
// Service's ClusterIP, which a recreated Service would not get back, so the Services of the
// kept revisions of Indexes with serving disabled stay (without pods) until those revisions
// are pruned, and turning serving on again finds the address their collections are wired to.
// idx is the Index in hand (its status as this reconcile has it); others as listed.
func (r *IndexReconciler) addressNeeds(idx *ragopsv1alpha1.Index, indexes []ragopsv1alpha1.Index) map[string]bool {
	out := map[string]bool{}
	if r.Options.ModelServerURLs != ModelServerClusterIP {
		return out
	}
	for i := range indexes {
		other := &indexes[i]
		if other.UID == idx.UID {
			other = idx
		}
		if other.Spec.Serving.ServingEnabled() {
			continue
		}
		on := other.DeepCopy()
		on.Spec.Serving.Enabled = nil
		for name := range servingNeeds(on, "", r.Options.WorkerImage) {
			out[name] = true
		}
	}
	return out
}

// deleteServer deletes a model server's objects (those already gone are skipped); keepService
// leaves its Service (addressNeeds).
func (r *IndexReconciler) deleteServer(ctx context.Context, ns, name string, keepService bool) error {
	om := metav1.ObjectMeta{Namespace: ns, Name: name}
	objs := []client.Object{&appsv1.Deployment{ObjectMeta: om}, &networkingv1.NetworkPolicy{ObjectMeta: om}, &policyv1.PodDisruptionBudget{ObjectMeta: om}}
	if !keepService {
		objs = append(objs, &corev1.Service{ObjectMeta: om})
	}
	for _, o := range objs {
		if err := r.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
