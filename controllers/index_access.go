package controllers

// Access endpoint: an Index whose Corpus has spec.access gets the namespace's query endpoint
// (access/specs: ServiceAccount, Role and RoleBinding, TokenReview ClusterRoleBinding,
// Deployment, Service, NetworkPolicy) and, for an in-cluster Weaviate, the NetworkPolicy that
// admits only the operator, its workers and the endpoints (docs/security.md). They are
// applied server-side and removed with the namespace's last such Index.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	accessspecs "github.com/ragops/ragops/access/specs"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
	servingspecs "github.com/ragops/ragops/serving/specs"
)

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterrolebindings,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=patch
// +kubebuilder:rbac:groups="",resources=services,verbs=patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// annotationClientNamespaces lists, on the Weaviate NetworkPolicy, the namespaces it admits.
const annotationClientNamespaces = "ragops.dev/client-namespaces"

// accessFieldOwner is the server-side apply field manager of one Index: each Index that
// needs the namespace's endpoint applies the objects with its own owner reference, and
// ownerReferences merge by UID, so the objects go with the last such Index.
func accessFieldOwner(idx *ragopsv1alpha1.Index) client.FieldOwner {
	return client.FieldOwner("ragops-index-" + string(idx.UID))
}

// reconcileAccessEndpoint applies (server-side apply, once per process and whenever they
// change) what an Index with access rules needs: the endpoint objects in its namespace, owned
// by the Index, the TokenReview ClusterRoleBinding, and for an in-cluster Weaviate the
// NetworkPolicy admitting this namespace. Drift in the endpoint objects is corrected on the
// manager's next start; releaseAccessEndpoint removes what no Index needs any more.
func (r *IndexReconciler) reconcileAccessEndpoint(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	if st.corpus == nil || st.corpus.Spec.Access == nil {
		return reconcile.Proceed, nil
	}
	e, wns, inCluster := r.accessEndpoint(idx.Namespace, idx.Spec.Weaviate.URL)
	owner := metav1.OwnerReference{APIVersion: ragopsv1alpha1.GroupVersion.String(), Kind: "Index", Name: idx.Name, UID: idx.UID}
	e.Owners = []metav1.OwnerReference{owner}
	objs := []client.Object{e.ServiceAccount(), e.Role(), e.RoleBinding(), e.Deployment(), e.Service(), e.NetworkPolicy(), e.ClusterRoleBinding()}
	sum := sha256.New()
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return reconcile.Stop, err
		}
		sum.Write(raw)
	}
	fmt.Fprintf(sum, "weaviate %s %v", wns, inCluster)
	key := hex.EncodeToString(sum.Sum(nil))
	if applied, _ := r.accessApplied.Load(idx.UID); applied == key {
		return reconcile.Proceed, nil
	}
	for _, o := range objs {
		if err := r.apply(ctx, o, accessFieldOwner(idx)); err != nil {
			return reconcile.Stop, fmt.Errorf("access endpoint %T %s: %w", o, o.GetName(), err)
		}
	}
	if inCluster {
		if err := r.updateWeaviatePolicy(ctx, wns, idx.Namespace, true); err != nil {
			return reconcile.Stop, err
		}
	}
	r.accessApplied.Store(idx.UID, key)
	return reconcile.Proceed, nil
}

// accessEndpoint returns the endpoint of namespace for an Index on the Weaviate at url, and
// that Weaviate's namespace when it runs in the cluster.
func (r *IndexReconciler) accessEndpoint(namespace, url string) (e *accessspecs.Endpoint, wns string, inCluster bool) {
	e = &accessspecs.Endpoint{Namespace: namespace, Image: r.Options.WorkerImage}
	wns, inCluster = servingspecs.WeaviateNamespace(url, namespace)
	if inCluster {
		e.WeaviateNamespaces = []string{wns}
	}
	return e, wns, inCluster
}

// apply server-side applies o (a typed object of the client's scheme) as owner, forcing
// ownership of the fields it sets.
func (r *IndexReconciler) apply(ctx context.Context, o client.Object, owner client.FieldOwner) error {
	gvk, err := apiutil.GVKForObject(o, r.Scheme())
	if err != nil {
		return err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(gvk)
	return r.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), owner, client.ForceOwnership)
}

// releaseAccessEndpoint runs when an Index is deleted: when no other Index of its namespace
// (not itself being deleted) has a Corpus with access rules, the namespace's endpoint objects
// and its TokenReview ClusterRoleBinding are deleted (the namespaced ones would also go with
// their owners; the binding has none) and the Weaviate NetworkPolicy stops admitting the
// namespace (deleted with its last client namespace).
func (r *IndexReconciler) releaseAccessEndpoint(ctx context.Context, idx *ragopsv1alpha1.Index) error {
	r.accessApplied.Delete(idx.UID)
	r.readersApplied.Delete(idx.UID)
	var list ragopsv1alpha1.IndexList
	if err := r.List(ctx, &list, client.InNamespace(idx.Namespace)); err != nil {
		return err
	}
	_, wns, inCluster := r.accessEndpoint(idx.Namespace, idx.Spec.Weaviate.URL)
	endpointNeeded, policyNeeded := false, false
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == idx.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		var c ragopsv1alpha1.Corpus
		if err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.CorpusRef.Name}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if c.Spec.Access == nil {
			continue
		}
		endpointNeeded = true
		if ons, oin := servingspecs.WeaviateNamespace(o.Spec.Weaviate.URL, o.Namespace); oin && ons == wns {
			policyNeeded = true
		}
	}
	if !endpointNeeded {
		e, _, _ := r.accessEndpoint(idx.Namespace, idx.Spec.Weaviate.URL)
		for _, o := range []client.Object{e.Deployment(), e.Service(), e.NetworkPolicy(), e.RoleBinding(), e.Role(), e.ServiceAccount(), e.ClusterRoleBinding()} {
			if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("access endpoint %T %s: %w", o, o.GetName(), err)
			}
		}
	}
	if inCluster && !policyNeeded {
		return r.updateWeaviatePolicy(ctx, wns, idx.Namespace, false)
	}
	return nil
}

// updateWeaviatePolicy brings the NetworkPolicy in front of the Weaviate of namespace wns up
// to date with its client namespaces (the annotation), with ns added (admit) or removed; it
// creates the policy for its first client namespace and deletes it after its last.
func (r *IndexReconciler) updateWeaviatePolicy(ctx context.Context, wns, ns string, admit bool) error {
	live := r.Options.reader(r.Client)
	w := &accessspecs.Weaviate{Namespace: wns, ManagerNamespace: r.Options.ManagerNamespace}
	cur := w.Policy()
	err := live.Get(ctx, client.ObjectKeyFromObject(cur), cur)
	if apierrors.IsNotFound(err) {
		if !admit {
			return nil
		}
		w.ClientNamespaces = []string{ns}
		p := w.Policy()
		p.Annotations = map[string]string{annotationClientNamespaces: ns}
		return client.IgnoreAlreadyExists(r.Create(ctx, p))
	}
	if err != nil {
		return err
	}
	listed := slices.DeleteFunc(strings.Split(cur.Annotations[annotationClientNamespaces], ","), func(s string) bool { return s == "" || s == ns })
	if admit {
		listed = append(listed, ns)
	}
	if len(listed) == 0 {
		return client.IgnoreNotFound(r.Delete(ctx, cur, client.Preconditions{ResourceVersion: &cur.ResourceVersion}))
	}
	slices.Sort(listed)
	w.ClientNamespaces = listed
	want := w.Policy()
	joined := strings.Join(listed, ",")
	if equality.Semantic.DeepEqual(cur.Spec, want.Spec) && cur.Annotations[annotationClientNamespaces] == joined {
		return nil
	}
	cur.Spec = want.Spec
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[annotationClientNamespaces] = joined
	return r.Update(ctx, cur)
}
