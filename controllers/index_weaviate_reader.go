package controllers

// Weaviate reader: for an Index whose Corpus has spec.access, a Weaviate RBAC role that reads
// only the Index's collections and alias, and a database user holding it whose key the access
// endpoint uses (vectorstore/authz); skipped, with the condition saying so, on a Weaviate
// without RBAC (docs/security.md).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/weaviate/weaviate-go-client/v5/weaviate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	accessspecs "github.com/ragops/ragops/access/specs"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/authz"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;delete

// ConditionWeaviateReader reasons.
const (
	ReasonReaderProvisioned        = "Provisioned"
	ReasonRBACNotEnforced          = "RBACNotEnforced"
	ReasonReaderProvisioningFailed = "ProvisioningFailed"
)

// readerApplied is what was provisioned (a hash of the Weaviate, the keys, the alias and the
// collections) and the condition that reported it: set again when the stored status lacks it
// (a status patch that was lost).
type readerApplied struct {
	key  string
	cond metav1.Condition
}

// appliedReader records (in r.readersApplied, so a steady-state reconcile makes no Weaviate
// call) what was provisioned for idx and returns the result that reports it.
func (r *IndexReconciler) appliedReader(idx *ragopsv1alpha1.Index, key string, status metav1.ConditionStatus, reason, msg string) reconcile.Result {
	r.readersApplied.Store(idx.UID, readerApplied{key: key, cond: metav1.Condition{Type: ragopsv1alpha1.ConditionWeaviateReader, Status: status, Reason: reason, Message: msg}})
	return reconcile.Proceed.Set(ragopsv1alpha1.ConditionWeaviateReader, status, reason, msg)
}

// adminStores holds one store per Weaviate endpoint and provisioning key (a store keeps its
// connections).
var adminStores = cachedStores(NewWeaviateStore)

// weaviateAdmin opens a client of the Index's Weaviate with the key that provisions roles and
// users: Options.WeaviateAdminKey, else the Index's own key.
func (r *IndexReconciler) weaviateAdmin(ctx context.Context, idx *ragopsv1alpha1.Index, indexKey string) (*weaviate.Client, error) {
	key := r.Options.WeaviateAdminKey
	if key == "" {
		key = indexKey
	}
	ca, msg, _, err := weaviateCABundle(ctx, r.Client, idx.Namespace, idx.Spec.Weaviate)
	if err != nil {
		return nil, err
	}
	if msg != "" {
		return nil, errors.New(msg)
	}
	s, err := adminStores(idx.Spec.Weaviate, key, ca)
	if err != nil {
		return nil, err
	}
	c, ok := s.(interface{ Client() *weaviate.Client })
	if !ok {
		return nil, fmt.Errorf("store %T has no Weaviate client", s)
	}
	return c.Client(), nil
}

// readerCollections are the collections the Index's reader may read: every recorded
// revision's and the desired revision's.
func readerCollections(idx *ragopsv1alpha1.Index, revision string) []string {
	var out []string
	for _, rev := range idx.Status.Revisions {
		if rev.Collection != "" {
			out = append(out, rev.Collection)
		}
	}
	if n, err := vectorstore.CollectionName(idx.Namespace, idx.Name, revision); err == nil {
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reconcileWeaviateReader provisions the Index's Weaviate reader (role, user, and the key in
// Secret accessspecs.ReaderSecret, created when the user is, rotated when the Secret is lost)
// and reports it in ConditionWeaviateReader; once the Corpus has no access rules it deletes
// them. A failure does not stop the reconcile (the
// endpoint then uses the Index's key, and still filters); it is retried on the next.
func (r *IndexReconciler) reconcileWeaviateReader(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	if st.corpus == nil || st.corpus.Spec.Access == nil {
		if meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionWeaviateReader) == nil {
			return reconcile.Proceed, nil
		}
		// The Corpus dropped its access rules: the reader goes (the endpoint no longer serves it).
		if err := r.deleteWeaviateReader(ctx, idx, st.apiKey); err != nil {
			return reconcile.Stop, err
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: accessspecs.ReaderSecret(idx.Name)}}
		if err := client.IgnoreNotFound(r.Delete(ctx, sec)); err != nil {
			return reconcile.Stop, err
		}
		return reconcile.Proceed.Remove(ragopsv1alpha1.ConditionWeaviateReader), nil
	}
	cols := readerCollections(idx, st.revision)
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%x|%s|%v", idx.Spec.Weaviate.URL, idx.Spec.Weaviate.GRPCAddress,
		sha256.Sum256([]byte(r.Options.WeaviateAdminKey+"|"+st.apiKey)), st.alias, cols))
	key := hex.EncodeToString(sum[:])
	if v, ok := r.readersApplied.Load(idx.UID); ok && v.(readerApplied).key == key {
		c, have := v.(readerApplied).cond, meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionWeaviateReader)
		if have != nil && have.Status == c.Status && have.Reason == c.Reason && have.Message == c.Message {
			return reconcile.Proceed, nil
		}
		return reconcile.Proceed.Set(c.Type, c.Status, c.Reason, c.Message), nil
	}
	failed := func(err error) (reconcile.Result, error) {
		return reconcile.Proceed.Set(ragopsv1alpha1.ConditionWeaviateReader, metav1.ConditionFalse, ReasonReaderProvisioningFailed,
			fmt.Sprintf("cannot provision the Weaviate reader (the endpoint uses spec.weaviate.apiKeySecretRef meanwhile): %v", err)), nil
	}
	c, err := r.weaviateAdmin(ctx, idx, st.apiKey)
	if err != nil {
		return failed(err)
	}
	// A handful of calls, each bounded by StoreTimeout.
	cctx, cancel := context.WithTimeout(ctx, 3*StoreTimeout)
	defer cancel()
	on, err := authz.Enforced(cctx, c)
	if err != nil {
		return failed(err)
	}
	if !on {
		return r.appliedReader(idx, key, metav1.ConditionFalse, ReasonRBACNotEnforced,
			"Weaviate does not enforce RBAC (AUTHORIZATION_RBAC_ENABLED): a client that reaches it reads every collection; only the NetworkPolicy keeps direct reads out (docs/security.md)"), nil
	}
	name := accessspecs.ReaderSecret(idx.Name)
	var sec corev1.Secret
	err = r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: name}, &sec)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Stop, err
	}
	lost := apierrors.IsNotFound(err) || len(sec.Data[accessspecs.ReaderSecretKey]) == 0
	apiKey, err := authz.EnsureReader(cctx, c, st.alias, cols, lost)
	if err != nil {
		return failed(err)
	}
	if apiKey != "" {
		if err := r.storeReaderKey(ctx, idx, name, apiKey); err != nil {
			return reconcile.Stop, err
		}
	}
	return r.appliedReader(idx, key, metav1.ConditionTrue, ReasonReaderProvisioned,
		fmt.Sprintf("Weaviate user %s (role %s) reads only this Index's %d collection(s) and alias; its key is in Secret %s",
			authz.ReaderUser(st.alias), authz.ReaderRole(st.alias), len(cols), name)), nil
}

// storeReaderKey writes apiKey into Secret name, owned by the Index.
func (r *IndexReconciler) storeReaderKey(ctx context.Context, idx *ragopsv1alpha1.Index, name, apiKey string) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: idx.Namespace, Labels: accessspecs.Labels(),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: ragopsv1alpha1.GroupVersion.String(), Kind: "Index", Name: idx.Name, UID: idx.UID}}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{accessspecs.ReaderSecretKey: []byte(apiKey)}}
	err := r.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var cur corev1.Secret
	if err := r.Options.reader(r.Client).Get(ctx, client.ObjectKeyFromObject(sec), &cur); err != nil {
		return err
	}
	cur.Data = sec.Data
	return r.Update(ctx, &cur)
}

// deleteWeaviateReader removes the Index's Weaviate reader (its key stops working) when the
// Index reported one provisioned.
func (r *IndexReconciler) deleteWeaviateReader(ctx context.Context, idx *ragopsv1alpha1.Index, indexKey string) error {
	r.readersApplied.Delete(idx.UID)
	if !meta.IsStatusConditionTrue(idx.Status.Conditions, ragopsv1alpha1.ConditionWeaviateReader) {
		return nil
	}
	c, err := r.weaviateAdmin(ctx, idx, indexKey)
	if err != nil {
		return err
	}
	alias, err := vectorstore.AliasName(idx.Namespace, idx.Name)
	if err != nil {
		return err
	}
	return authz.DeleteReader(ctx, c, alias)
}
