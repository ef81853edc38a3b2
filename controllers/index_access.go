package controllers

// Access endpoint: an Index whose Corpus has spec.access gets the namespace's query endpoint
// (access/specs: ServiceAccount, Role and RoleBinding, TokenReview ClusterRoleBinding,
// Deployment, Service, NetworkPolicy) and, for an in-cluster Weaviate, the NetworkPolicy that
// admits only the operator, its workers and the endpoints (docs/security.md).

import (
	"context"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	accessspecs "github.com/ragops/ragops/access/specs"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
	servingspecs "github.com/ragops/ragops/serving/specs"
)

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;update
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings;clusterrolebindings,verbs=get;create;update
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// annotationClientNamespaces lists, on the Weaviate NetworkPolicy, the namespaces it admits.
const annotationClientNamespaces = "ragops.dev/client-namespaces"

// accessEnsured remembers the Indexes (UID) whose endpoint objects this process ensured, so a
// steady-state reconcile reads none of them.
var accessEnsured sync.Map

// reconcileAccessEndpoint creates what an Index with access rules needs: the endpoint objects
// in its namespace (this Index added as an owner, so they go with the last such Index) and
// the Weaviate NetworkPolicy (this namespace added to its clients). Existing objects keep
// their spec.
func (r *IndexReconciler) reconcileAccessEndpoint(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	if st.corpus == nil || st.corpus.Spec.Access == nil {
		return reconcile.Proceed, nil
	}
	if _, done := accessEnsured.Load(idx.UID); done {
		return reconcile.Proceed, nil
	}
	e := &accessspecs.Endpoint{Namespace: idx.Namespace, Image: r.Options.WorkerImage}
	wns, inCluster := servingspecs.WeaviateNamespace(idx.Spec.Weaviate.URL, idx.Namespace)
	if inCluster {
		e.WeaviateNamespaces = []string{wns}
	}
	owner := metav1.OwnerReference{APIVersion: ragopsv1alpha1.GroupVersion.String(), Kind: "Index", Name: idx.Name, UID: idx.UID}
	live := r.Options.reader(r.Client)
	for _, o := range []client.Object{e.ServiceAccount(), e.Role(), e.RoleBinding(), e.Deployment(), e.Service(), e.NetworkPolicy()} {
		if err := r.ensureOwned(ctx, live, o, owner); err != nil {
			return reconcile.Stop, err
		}
	}
	if err := r.ensureOwned(ctx, live, e.ClusterRoleBinding(), metav1.OwnerReference{}); err != nil {
		return reconcile.Stop, err
	}
	if inCluster {
		if err := r.ensureWeaviatePolicy(ctx, live, wns, idx.Namespace); err != nil {
			return reconcile.Stop, err
		}
	}
	accessEnsured.Store(idx.UID, true)
	return reconcile.Proceed, nil
}

// ensureOwned creates o with owner (none when owner has no UID), or adds owner to the
// existing object's owners.
func (r *IndexReconciler) ensureOwned(ctx context.Context, live client.Reader, o client.Object, owner metav1.OwnerReference) error {
	cur := o.DeepCopyObject().(client.Object)
	err := live.Get(ctx, client.ObjectKeyFromObject(o), cur)
	if apierrors.IsNotFound(err) {
		if owner.UID != "" {
			o.SetOwnerReferences([]metav1.OwnerReference{owner})
		}
		if err := r.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	if err != nil || owner.UID == "" || slices.ContainsFunc(cur.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == owner.UID }) {
		return err
	}
	cur.SetOwnerReferences(append(cur.GetOwnerReferences(), owner))
	return r.Update(ctx, cur)
}

// ensureWeaviatePolicy creates the NetworkPolicy in front of the Weaviate of namespace wns, or
// adds ns to the client namespaces it admits.
func (r *IndexReconciler) ensureWeaviatePolicy(ctx context.Context, live client.Reader, wns, ns string) error {
	w := &accessspecs.Weaviate{Namespace: wns, ManagerNamespace: r.Options.ManagerNamespace, ClientNamespaces: []string{ns}}
	cur := w.Policy()
	err := live.Get(ctx, client.ObjectKeyFromObject(cur), cur)
	if apierrors.IsNotFound(err) {
		p := w.Policy()
		p.Annotations = map[string]string{annotationClientNamespaces: ns}
		return client.IgnoreAlreadyExists(r.Create(ctx, p))
	}
	if err != nil {
		return err
	}
	listed := strings.Split(cur.Annotations[annotationClientNamespaces], ",")
	if slices.Contains(listed, ns) {
		return nil
	}
	w.ClientNamespaces = append(slices.DeleteFunc(listed, func(s string) bool { return s == "" }), ns)
	slices.Sort(w.ClientNamespaces)
	want := w.Policy()
	cur.Spec = want.Spec
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[annotationClientNamespaces] = strings.Join(w.ClientNamespaces, ",")
	return r.Update(ctx, cur)
}
