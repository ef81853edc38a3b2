package controllers

// Cleanup references: the Secret and ConfigMap an Index's deletion needs (the Weaviate API key,
// the CA bundle) stay readable until every Index that names them has removed its collections.
// In a namespace deletion everything is deleted at once; without the hold the key is gone
// before the Index's cleanup runs, every Weaviate call fails with 401 or a TLS error until
// FinalizerTimeout, and the collections are left behind (issue 32, defect 7).

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=patch

// CleanupFinalizer is the finalizer ragops puts on a Secret or ConfigMap an Index's cleanup
// reads (spec.weaviate.apiKeySecretRef, spec.weaviate.caBundle) while any Index that names it
// still holds Finalizer. Only metadata.finalizers is patched, never data.
const CleanupFinalizer = "ragops.dev/index-cleanup"

// cleanupRef is one object an Index's cleanup reads: kind "Secret" or "ConfigMap".
type cleanupRef struct {
	Kind, Name string
}

func (c cleanupRef) String() string { return fmt.Sprintf("%s %q", c.Kind, c.Name) }

// object is the metadata-only object the reference names, for Get and Patch.
func (c cleanupRef) object(ns string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Name}}
	o.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(c.Kind))
	return o
}

// cleanupRefs lists the objects an Index's cleanup reads.
func cleanupRefs(idx *ragopsv1alpha1.Index) []cleanupRef {
	w := idx.Spec.Weaviate
	var refs []cleanupRef
	if r := w.APIKeySecretRef; r != nil {
		refs = append(refs, cleanupRef{"Secret", r.Name})
	}
	if ca := w.CABundle; ca != nil {
		if ca.SecretKeyRef != nil {
			refs = append(refs, cleanupRef{"Secret", ca.SecretKeyRef.Name})
		}
		if ca.ConfigMapKeyRef != nil {
			refs = append(refs, cleanupRef{"ConfigMap", ca.ConfigMapKeyRef.Name})
		}
	}
	return refs
}

// holdCleanupRefs puts CleanupFinalizer on every object the Index's cleanup reads. A missing
// object is left to resolveInputs, which names it.
func holdCleanupRefs(ctx context.Context, c client.Client, idx *ragopsv1alpha1.Index) error {
	for _, ref := range cleanupRefs(idx) {
		o := ref.object(idx.Namespace)
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if controllerutil.ContainsFinalizer(o, CleanupFinalizer) || !o.DeletionTimestamp.IsZero() {
			continue // a terminating object cannot take a new finalizer
		}
		base := o.DeepCopy()
		controllerutil.AddFinalizer(o, CleanupFinalizer)
		if err := c.Patch(ctx, o, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue // gone, or changed: the next reconcile holds it
			}
			return fmt.Errorf("hold %s for cleanup: %w", ref, err)
		}
	}
	return nil
}

// CleanupRefReconciler removes CleanupFinalizer from a Secret or ConfigMap once no Index in
// its namespace that still holds Finalizer names it: after the last such Index's collections
// are gone, or after every Index stopped naming it.
type CleanupRefReconciler struct {
	client.Client
	// Kind is "Secret" or "ConfigMap".
	Kind string
}

// Reconcile releases one object.
func (r *CleanupRefReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ref := cleanupRef{r.Kind, req.Name}
	o := ref.object(req.Namespace)
	if err := r.Get(ctx, req.NamespacedName, o); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(o, CleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	field := indexBySecret
	if r.Kind == "ConfigMap" {
		field = indexByConfigMap
	}
	var idxs ragopsv1alpha1.IndexList
	if err := r.List(ctx, &idxs, client.InNamespace(req.Namespace), client.MatchingFields{field: req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for _, idx := range idxs.Items {
		if controllerutil.ContainsFinalizer(&idx, Finalizer) {
			return ctrl.Result{}, nil // still needed by idx's cleanup
		}
	}
	base := o.DeepCopy()
	controllerutil.RemoveFinalizer(o, CleanupFinalizer)
	if err := r.Patch(ctx, o, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).V(1).Info("released after the last Index's cleanup", "object", ref.String())
	return ctrl.Result{}, nil
}

// SetupWithManager watches the held kind (metadata only) and every Index, mapping an Index's
// change to the objects it names before and after it, so that a reference that was dropped or
// whose last Index finished its cleanup is released.
func (r *CleanupRefReconciler) SetupWithManager(mgr ctrl.Manager) error {
	var obj client.Object = &corev1.Secret{}
	if r.Kind == "ConfigMap" {
		obj = &corev1.ConfigMap{}
	}
	held := predicate.NewPredicateFuncs(func(o client.Object) bool { return controllerutil.ContainsFinalizer(o, CleanupFinalizer) })
	return ctrl.NewControllerManagedBy(mgr).
		Named("cleanupref-"+r.Kind).
		WatchesMetadata(obj, &handler.EnqueueRequestForObject{}, builder.WithPredicates(held)).
		WatchesRawSource(source.Kind(mgr.GetCache(), &ragopsv1alpha1.Index{}, indexRefsHandler(r.Kind))).
		Complete(r)
}

type workqueueRequests = workqueue.TypedRateLimitingInterface[ctrl.Request]

// indexRefsHandler enqueues the objects of one kind an Index names, before and after a change.
func indexRefsHandler(kind string) handler.TypedEventHandler[*ragopsv1alpha1.Index, ctrl.Request] {
	add := func(q interface{ Add(ctrl.Request) }, idx *ragopsv1alpha1.Index) {
		for _, ref := range cleanupRefs(idx) {
			if ref.Kind == kind {
				q.Add(ctrl.Request{NamespacedName: types.NamespacedName{Namespace: idx.Namespace, Name: ref.Name}})
			}
		}
	}
	return handler.TypedFuncs[*ragopsv1alpha1.Index, ctrl.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*ragopsv1alpha1.Index], q workqueueRequests) {
			add(q, e.ObjectOld)
			add(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*ragopsv1alpha1.Index], q workqueueRequests) {
			add(q, e.Object)
		},
	}
}
