package controllers

// The model server set of a namespace: which servers its Indexes need, written once per
// change by one small reconciler keyed by namespace (see index_serving.go for the rules).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/serving/specs"
)

// modelServerSetName is the Name of the ModelServerReconciler's requests (their Namespace is
// the namespace whose set they reconcile).
const modelServerSetName = "model-servers"

// ModelServerReconciler writes the model servers of one namespace: from the cached Indexes
// there it computes the servers their kept and desired revisions need (servingNeeds), with
// the settings settingsFor decides, creates or updates only the objects whose content hash
// differs from the cached object's, and deletes the servers none needs. It runs when an
// Index's serving needs change (servingFingerprint), when a server's object changes other
// than in its status, and once per namespace holding model server objects when the manager
// starts; an unchanged set reads only the cache and writes nothing.
type ModelServerReconciler struct {
	client.Client
	Options Options
}

// Reconcile brings the model servers of req.Namespace to what its Indexes need.
func (r *ModelServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := req.Namespace
	var list ragopsv1alpha1.IndexList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return ctrl.Result{}, err
	}
	users := map[string][]*ragopsv1alpha1.Index{}
	keys := map[string]servingKey{}
	addressed := map[string]bool{}
	clusterIP := r.Options.ModelServerURLs == ModelServerClusterIP
	for i := range list.Items {
		idx := &list.Items[i]
		for name, k := range servingNeeds(idx, idx.Status.Revision, r.Options.WorkerImage) {
			users[name] = append(users[name], idx)
			keys[name] = k
		}
		if clusterIP {
			maps.Copy(addressed, addressNeeds(idx, r.Options.WorkerImage))
		}
	}
	have, err := r.cachedServers(ctx, ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	var res ctrl.Result
	requeue := func(d time.Duration) {
		if res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
	}
	// What no Index needs: deleted once past the grace (see Options.ModelServerGrace).
	for name, objs := range have {
		if len(users[name]) > 0 {
			continue
		}
		for _, o := range objs {
			if _, svc := o.(*corev1.Service); svc && addressed[name] {
				continue // its ClusterIP stays for the collections wired to it (addressNeeds)
			}
			if age := time.Since(o.GetCreationTimestamp().Time); age < r.Options.ModelServerGrace {
				requeue(r.Options.ModelServerGrace - age)
				continue
			}
			if err := r.Delete(ctx, o, client.Preconditions{UID: ptr.To(o.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return res, err
			}
			log.FromContext(ctx).Info("model server object deleted: no kept revision needs it", "kind", fmt.Sprintf("%T", o), "name", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(users)) {
		err := r.ensureServer(ctx, keys[name], users[name], have[name])
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			// The cache had not seen an earlier write yet: the next look finds it.
			log.FromContext(ctx).V(1).Info("model server changed meanwhile; looking again", "server", name, "error", err.Error())
			requeue(reconcile.ConflictRequeue)
			continue
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// cachedServers returns the model server objects of ns in the manager's cache, by server
// name and kind ("Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget").
func (r *ModelServerReconciler) cachedServers(ctx context.Context, ns string) (map[string]map[string]client.Object, error) {
	out := map[string]map[string]client.Object{}
	sel := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: componentModelServer}}
	add := func(kind string, o client.Object) {
		if out[o.GetName()] == nil {
			out[o.GetName()] = map[string]client.Object{}
		}
		out[o.GetName()][kind] = o
	}
	var deps appsv1.DeploymentList
	var svcs corev1.ServiceList
	var nps networkingv1.NetworkPolicyList
	var pdbs policyv1.PodDisruptionBudgetList
	for _, l := range []client.ObjectList{&deps, &svcs, &nps, &pdbs} {
		if err := r.List(ctx, l, sel...); err != nil {
			return nil, err
		}
	}
	for i := range deps.Items {
		add("Deployment", &deps.Items[i])
	}
	for i := range svcs.Items {
		add("Service", &svcs.Items[i])
	}
	for i := range nps.Items {
		add("NetworkPolicy", &nps.Items[i])
	}
	for i := range pdbs.Items {
		add("PodDisruptionBudget", &pdbs.Items[i])
	}
	return out, nil
}

// kindOf is the key of o in cachedServers' maps.
func kindOf(o client.Object) string {
	switch o.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Service:
		return "Service"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	}
	return fmt.Sprintf("%T", o)
}

// ensureServer writes the objects of the model server k needed by users (at least one), with
// the settings settingsFor decides: those absent from have (the cached objects of the
// server, by kind) are created, those whose annotationSpecHash differs are updated, a
// PodDisruptionBudget no longer wanted is deleted. The Deployment says how many Indexes need
// the server and whose settings it runs (AnnotationServerIndexes, annotationSettingsFrom,
// annotationPrecisionOverride). Errors: a Conflict or AlreadyExists when the cache is behind.
func (r *ModelServerReconciler) ensureServer(ctx context.Context, k servingKey, users []*ragopsv1alpha1.Index, have map[string]client.Object) error {
	first, override := settingsFor(users)
	weaviateNS := map[string]bool{}
	for _, u := range users {
		if ns, ok := specs.WeaviateNamespace(u.Spec.Weaviate.URL, u.Namespace); ok {
			weaviateNS[ns] = true
		}
	}
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
		Image:  image, ModelDir: modelDir,
		Volumes: w.Volumes, Mounts: w.Mounts, Init: w.Init,
		Device: string(device), Precision: string(precision), Replicas: max(sv.Replicas, 1),
		Resources: sv.Resources, NodeSelector: sv.NodeSelector, Tolerations: sv.Tolerations,
		ManagerNamespace: r.Options.ManagerNamespace, Env: otlpEnv(),
		WeaviateNamespaces: slices.Sorted(maps.Keys(weaviateNS)),
	}
	dep := srv.Deployment()
	workload.RestrictPod(&dep.Spec.Template.Spec)
	dep.Annotations = map[string]string{
		AnnotationServerIndexes:     strconv.Itoa(len(users)),
		annotationSettingsFrom:      first.Name,
		annotationPrecisionOverride: string(override),
	}
	objs := []client.Object{srv.Service(), srv.NetworkPolicy()}
	if pdb := srv.PodDisruptionBudget(); pdb != nil {
		objs = append(objs, pdb)
	} else if old := have["PodDisruptionBudget"]; old != nil {
		if err := r.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	objs = append(objs, dep) // the Deployment last: its pods find their Service and policy
	for _, o := range objs {
		if err := r.ensureObject(ctx, o, have[kindOf(o)]); err != nil {
			return fmt.Errorf("model server %s: %w", srv.Name, err)
		}
	}
	return nil
}

// ensureObject creates desired when existing (its cached copy) is nil, or updates existing
// when what the controller last wrote (annotationSpecHash) differs; an unchanged object is
// not written. A Service keeps its allocated cluster IPs; a Deployment an autoscaler scales
// keeps its replicas.
func (r *ModelServerReconciler) ensureObject(ctx context.Context, desired, existing client.Object) error {
	hash := hashJSON(desired)[:16]
	ann := desired.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotationSpecHash] = hash
	desired.SetAnnotations(ann)
	if existing == nil {
		return r.Create(ctx, desired)
	}
	if existing.GetAnnotations()[annotationSpecHash] == hash {
		return nil
	}
	desired.SetResourceVersion(existing.GetResourceVersion())
	switch d := desired.(type) {
	case *corev1.Service:
		old := existing.(*corev1.Service)
		d.Spec.ClusterIP, d.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
		d.Spec.IPFamilies, d.Spec.IPFamilyPolicy = old.Spec.IPFamilies, old.Spec.IPFamilyPolicy
	case *appsv1.Deployment:
		have := existing.(*appsv1.Deployment).Spec.Replicas
		if ptr.Deref(have, 1) == ptr.Deref(d.Spec.Replicas, 1) {
			break // whoever scales it, the replicas stay as they are
		}
		autoscaled, err := r.autoscaled(ctx, d.Namespace, d.Name)
		if err != nil {
			return err
		}
		if autoscaled {
			d.Spec.Replicas = have
		}
	}
	return r.Update(ctx, desired)
}

// autoscaled reports whether a HorizontalPodAutoscaler (or KEDA's, which is one) scales the
// Deployment name in ns: its replicas are then the autoscaler's. The autoscalers are listed
// from the API server (Options.APIReader): the manager caches none (they are not ragops's,
// and caching every autoscaler of the cluster would cost memory for a read made only when a
// model server's Deployment is rewritten with other replicas than it has).
func (r *ModelServerReconciler) autoscaled(ctx context.Context, ns, name string) (bool, error) {
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

// addressNeeds returns, by name, the model servers whose Service (not Deployment) stays for
// idx although it needs no server: with ModelServerClusterIP, a collection's URL holds its
// Service's ClusterIP, which a recreated Service would not get back, so the Services of the
// kept revisions of an Index with serving disabled stay (without pods) until those revisions
// are pruned, and turning serving on again finds the address their collections are wired to.
func addressNeeds(idx *ragopsv1alpha1.Index, image string) map[string]bool {
	out := map[string]bool{}
	if idx.Spec.Serving.ServingEnabled() {
		return out
	}
	on := idx.DeepCopy()
	on.Spec.Serving.Enabled = nil
	for name := range servingNeeds(on, "", image) {
		out[name] = true
	}
	return out
}

// servingFingerprint hashes everything of idx the namespace's model server set depends on:
// the servers it needs, the Services it keeps for their address (with clusterIP), its
// spec.serving and its Weaviate URL (the namespace the NetworkPolicy admits). Status
// writes that change none of them (progress, conditions, syncs) do not run the
// ModelServerReconciler.
func servingFingerprint(idx *ragopsv1alpha1.Index, image string, clusterIP bool) string {
	f := struct {
		Needs    map[string]servingKey      `json:"needs"`
		Address  map[string]bool            `json:"address,omitempty"`
		Serving  ragopsv1alpha1.ServingSpec `json:"serving"`
		Weaviate string                     `json:"weaviate"`
	}{Needs: servingNeeds(idx, idx.Status.Revision, image), Serving: idx.Spec.Serving, Weaviate: idx.Spec.Weaviate.URL}
	if clusterIP {
		f.Address = addressNeeds(idx, image)
	}
	return hashJSON(f)
}

// SetupWithManager runs the reconciler for the namespaces of changed Indexes and of the
// model server objects in the manager's cache (ScopeCache caches only those).
func (r *ModelServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toSet := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: modelServerSetName}}}
	})
	clusterIP := r.Options.ModelServerURLs == ModelServerClusterIP
	needsChanged := predicate.Funcs{UpdateFunc: func(e evtUpdate) bool {
		o, okO := e.ObjectOld.(*ragopsv1alpha1.Index)
		n, okN := e.ObjectNew.(*ragopsv1alpha1.Index)
		return !okO || !okN || servingFingerprint(o, r.Options.WorkerImage, clusterIP) != servingFingerprint(n, r.Options.WorkerImage, clusterIP)
	}}
	// A server's status (ready replicas) changes nothing the reconciler writes.
	objChanged := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).Named("modelserver").
		Watches(&ragopsv1alpha1.Index{}, toSet, builder.WithPredicates(needsChanged))
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}} {
		b = b.Watches(o, toSet, builder.WithPredicates(objChanged))
	}
	return b.Complete(r)
}
