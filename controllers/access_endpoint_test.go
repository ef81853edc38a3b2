package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	accessspecs "github.com/ragops/ragops/access/specs"
	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, access: an Index whose Corpus has no access rules gets no endpoint; once the
// Corpus states rules, its revision changes (so its Indexes sync) and the Index controller creates the namespace's endpoint (ServiceAccount,
// Role, RoleBinding, TokenReview ClusterRoleBinding, Deployment, Service, NetworkPolicy, owned
// by the Index) and, for an Index on an in-cluster Weaviate, the NetworkPolicy in Weaviate's
// namespace admitting this namespace's workers and endpoint.
func TestIndexWithAccessRulesGetsTheEndpointAndTheWeaviatePolicy(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "weaviate"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	fixture(t, ns, nil)
	eventually(t, 60*time.Second, "the Index resolved its inputs", func() (bool, error) {
		return getIndex(t, ns, "besluiten").Status.Revision != "", nil
	})
	var dep appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: accessspecs.Name}, &dep); !apierrors.IsNotFound(err) {
		t.Fatalf("an Index without access rules got an endpoint (err %v)", err)
	}

	// A second Index of the Corpus on an in-cluster Weaviate, and rules on the Corpus.
	_, other := strategyAndIndex(ns)
	other.Name = "besluiten-incluster"
	other.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "http://weaviate.weaviate.svc:8080", GRPCAddress: "weaviate-grpc.weaviate.svc:50051"}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	var c ragopsv1alpha1.Corpus
	eventually(t, 60*time.Second, "the Corpus revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c)
		return err == nil && c.Status.Revision != "", err
	})
	before := c.Status.Revision
	c.Spec.Access = &ragopsv1alpha1.AccessSpec{Default: ragopsv1alpha1.AccessDeny,
		Rules: []ragopsv1alpha1.AccessRule{{Path: "besloten/**", Groups: []string{"raad"}}}}
	if err := env.Client.Update(ctx, &c); err != nil {
		t.Fatal(err)
	}
	// The rules are part of the Corpus revision: the Indexes sync (regroup) on a rule change.
	eventually(t, 60*time.Second, "a new Corpus revision for the rules", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c)
		return err == nil && c.Status.Revision != "" && c.Status.Revision != before, err
	})
	eventually(t, 60*time.Second, "the endpoint Deployment", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: accessspecs.Name}, &dep)
		return err == nil, client.IgnoreNotFound(err)
	})
	for _, o := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: accessspecs.Name}, o); err != nil {
			t.Errorf("%T: %v", o, err)
			continue
		}
		if len(o.GetOwnerReferences()) == 0 || o.GetOwnerReferences()[0].Kind != "Index" {
			t.Errorf("%T owners %v: want the Index", o, o.GetOwnerReferences())
		}
	}
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "endpoint") || !slices.Contains(args, ns) {
		t.Errorf("endpoint args %v", args)
	}
	var crb rbacv1.ClusterRoleBinding
	if err := env.Client.Get(ctx, client.ObjectKey{Name: accessspecs.Name + ":" + ns}, &crb); err != nil || crb.RoleRef.Name != accessspecs.AuthDelegator {
		t.Errorf("TokenReview binding %+v: %v", crb.RoleRef, err)
	}
	eventually(t, 60*time.Second, "the Weaviate NetworkPolicy admitting the namespace", func() (bool, error) {
		var p networkingv1.NetworkPolicy
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "weaviate", Name: accessspecs.WeaviatePolicyName}, &p)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, rule := range p.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == ns {
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// Issue 52, access: the endpoint's objects are kept up to date and cleaned up. Objects left
// by an older operator (another image and args, a Role without the Secrets rule) are
// brought to the current spec by server-side apply; two Indexes of the namespace both own
// the namespaced objects. Deleting one leaves everything to the other; deleting the last
// removes the endpoint, its TokenReview ClusterRoleBinding (which no owner reference can
// remove) and the namespace's admission in the Weaviate NetworkPolicy.
func TestAccessEndpointObjectsAreAppliedAndReleased(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "weaviate"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	old := &accessspecs.Endpoint{Namespace: ns, Image: "ragops:old"}
	staleDep := old.Deployment()
	staleDep.Spec.Template.Spec.Containers[0].Args = []string{"endpoint", "--stale"}
	staleRole := old.Role()
	staleRole.Rules = staleRole.Rules[:1]
	for _, o := range []client.Object{staleDep, staleRole} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	inCluster := func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "http://weaviate.weaviate.svc:8080", GRPCAddress: "weaviate-grpc.weaviate.svc:50051"}
	}
	a := fixture(t, ns, inCluster)
	_, b := strategyAndIndex(ns)
	b.Name = "besluiten-b"
	inCluster(b)
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	setCorpusAccess(t, ns, ruleForRaad)
	key := client.ObjectKey{Namespace: ns, Name: accessspecs.Name}
	want := &accessspecs.Endpoint{Namespace: ns, Image: workerImage}
	eventually(t, 60*time.Second, "the stale endpoint objects brought up to date, owned by both Indexes", func() (bool, error) {
		var dep appsv1.Deployment
		var role rbacv1.Role
		var sa corev1.ServiceAccount
		for _, o := range []client.Object{&dep, &role, &sa} {
			if err := env.Client.Get(ctx, key, o); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		owners := map[string]bool{}
		for _, ref := range dep.OwnerReferences {
			owners[ref.Name] = true
		}
		ctr := dep.Spec.Template.Spec.Containers[0]
		return ctr.Image == workerImage && slices.Equal(ctr.Args, want.Deployment().Spec.Template.Spec.Containers[0].Args) &&
			len(role.Rules) == len(want.Role().Rules) && len(sa.OwnerReferences) == 2 && owners[a.Name] && owners[b.Name], nil
	})
	crbKey := client.ObjectKey{Name: accessspecs.Name + ":" + ns}
	if err := env.Client.Get(ctx, crbKey, &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Fatalf("TokenReview binding: %v", err)
	}
	admitted := func() (bool, error) {
		var p networkingv1.NetworkPolicy
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "weaviate", Name: accessspecs.WeaviatePolicyName}, &p)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && slices.Contains(strings.Split(p.Annotations["ragops.dev/client-namespaces"], ","), ns), err
	}
	eventually(t, 60*time.Second, "the Weaviate policy admitting the namespace", admitted)

	remove := func(name string) {
		t.Helper()
		ix := getIndex(t, ns, name)
		base := ix.DeepCopy()
		ix.Annotations = map[string]string{controllers.AnnotationSkipCleanup: "true"}
		if err := env.Client.Patch(ctx, ix, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, ix); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "Index "+name+" gone", func() (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ragopsv1alpha1.Index{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
	remove(a.Name)
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &rbacv1.ClusterRoleBinding{}} {
		k := key
		if _, ok := o.(*rbacv1.ClusterRoleBinding); ok {
			k = crbKey
		}
		if err := env.Client.Get(ctx, k, o); err != nil {
			t.Errorf("%T after deleting one of two Indexes: %v", o, err)
		}
	}
	if ok, err := admitted(); !ok || err != nil {
		t.Errorf("the Weaviate policy stopped admitting the namespace with an Index left (err %v)", err)
	}

	remove(b.Name)
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.ClusterRoleBinding{}} {
		k := key
		if _, ok := o.(*rbacv1.ClusterRoleBinding); ok {
			k = crbKey
		}
		if err := env.Client.Get(ctx, k, o); !apierrors.IsNotFound(err) {
			t.Errorf("%T after deleting the last Index: %v, want not found", o, err)
		}
	}
	if ok, err := admitted(); ok || err != nil {
		t.Errorf("the Weaviate policy still admits the namespace (err %v)", err)
	}
}

// ruleForRaad is an access spec: besloten/** for group raad, default deny.
var ruleForRaad = &ragopsv1alpha1.AccessSpec{Default: ragopsv1alpha1.AccessDeny,
	Rules: []ragopsv1alpha1.AccessRule{{Path: "besloten/**", Groups: []string{"raad"}}}}

// setCorpusAccess sets the spec.access of Corpus "besluiten" of ns.
func setCorpusAccess(t *testing.T, ns string, access *ragopsv1alpha1.AccessSpec) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c ragopsv1alpha1.Corpus
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &c); err != nil {
			return err
		}
		c.Spec.Access = access.DeepCopy()
		return env.Client.Update(ctx, &c)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Issue 52, direct reads bypass the filter: for an Index with access rules on a Weaviate with
// RBAC (a real one, started here), the operator provisions a role and a database user that
// read only the Index's collections, and stores the user's key in the Secret the endpoint
// reads: with it the Index's collection is readable, another collection is not, and nothing
// can be written. Deleting the Index deletes the user: its key stops working. On a Weaviate
// without RBAC the Index says so in its condition (nothing is provisioned).
func TestWeaviateReaderProvisionedForAnIndexWithAccessRules(t *testing.T) {
	ctx := context.Background()
	const rootKey = "root-key-for-tests"
	rbacWV := weaviatetest.StartWith(t, weaviatetest.Options{ExtraEnv: weaviatetest.RBACEnv(rootKey)})
	open := func(key string) *vectorstore.Store {
		t.Helper()
		s, err := vectorstore.New(vectorstore.Config{HTTPHost: rbacWV.HTTPAddr, GRPCHost: rbacWV.GRPCAddr, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	root := open(rootKey)
	// provision makes fixture's Index of a new namespace on this Weaviate, with access rules,
	// and returns it once its reader is provisioned, with the reader's key.
	provision := func() (*ragopsv1alpha1.Index, string) {
		t.Helper()
		ns := newNamespace(t)
		if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weaviate-root"},
			Data: map[string][]byte{"apiKey": []byte(rootKey)}}); err != nil {
			t.Fatal(err)
		}
		fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
			ix.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "http://" + rbacWV.HTTPAddr, GRPCAddress: rbacWV.GRPCAddr,
				APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "weaviate-root", Key: "apiKey"}}
		})
		setCorpusAccess(t, ns, ruleForRaad)
		var idx *ragopsv1alpha1.Index
		eventually(t, 90*time.Second, "the Weaviate reader provisioned", func() (bool, error) {
			idx = getIndex(t, ns, "besluiten")
			c := condition(idx, ragopsv1alpha1.ConditionWeaviateReader)
			if c != nil && c.Status == metav1.ConditionTrue {
				return true, nil
			}
			return false, fmt.Errorf("conditions %+v", idx.Status.Conditions)
		})
		var sec corev1.Secret
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: accessspecs.ReaderSecret("besluiten")}, &sec); err != nil {
			t.Fatal(err)
		}
		if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != idx.UID {
			t.Errorf("reader Secret owners %v, want the Index", sec.OwnerReferences)
		}
		return idx, string(sec.Data[accessspecs.ReaderSecretKey])
	}
	idx, key := provision()
	ns := idx.Namespace

	// The revision's collection (the build Job would write it) and another Index's.
	mine, err := vectorstore.CollectionName(ns, "besluiten", idx.Status.Revision)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := vectorstore.CollectionName(ns, "personeel", "r1")
	chunk := func(doc string) vectorstore.Chunk {
		text := "besluit over windenergie " + doc
		return vectorstore.Chunk{DocID: doc, End: len(text), Text: text, DocHash: "h", Vector: []float32{1, 0, 0, 0}}
	}
	for _, c := range []string{mine, other} {
		if err := root.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: c, Revision: "r", Dimensions: 4, Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat}}); err != nil {
			t.Fatal(err)
		}
		if err := root.Upsert(ctx, c, []vectorstore.Chunk{chunk(c)}); err != nil {
			t.Fatal(err)
		}
	}
	reader := open(key)
	search := func(target string) ([]vectorstore.Hit, error) {
		return reader.Search(ctx, target, vectorstore.Query{Mode: vectorstore.ModeBM25, Text: "windenergie", Limit: 5})
	}
	if hits, err := search(mine); err != nil || len(hits) != 1 {
		t.Errorf("the endpoint's key on its Index's collection: %d hits, %v", len(hits), err)
	}
	if hits, err := search(other); err == nil {
		t.Errorf("the endpoint's key read another collection: %d hits", len(hits))
	}
	if err := reader.Upsert(ctx, mine, []vectorstore.Chunk{chunk("injected")}); err == nil {
		t.Error("the endpoint's key wrote a chunk")
	}

	// On the suite's Weaviate (no RBAC) the condition says nothing is enforced.
	plainNS := newNamespace(t)
	fixture(t, plainNS, nil)
	setCorpusAccess(t, plainNS, ruleForRaad)
	eventually(t, 90*time.Second, "RBACNotEnforced on a Weaviate without RBAC", func() (bool, error) {
		c := condition(getIndex(t, plainNS, "besluiten"), ragopsv1alpha1.ConditionWeaviateReader)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == controllers.ReasonRBACNotEnforced, nil
	})

	// A Corpus that drops its access rules: the reader and its Secret go.
	dropped, droppedKey := provision()
	droppedCol, _ := vectorstore.CollectionName(dropped.Namespace, "besluiten", dropped.Status.Revision)
	if err := root.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: droppedCol, Revision: "r", Dimensions: 4, Index: vectorstore.VectorIndex{Type: vectorstore.IndexFlat}}); err != nil {
		t.Fatal(err)
	}
	if _, err := open(droppedKey).Search(ctx, droppedCol, vectorstore.Query{Mode: vectorstore.ModeBM25, Text: "windenergie", Limit: 5}); err != nil {
		t.Fatalf("the second Index's key before the rules are dropped: %v", err)
	}
	setCorpusAccess(t, dropped.Namespace, nil)
	eventually(t, 90*time.Second, "the reader gone with the access rules", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: dropped.Namespace, Name: accessspecs.ReaderSecret("besluiten")}, &corev1.Secret{})
		return apierrors.IsNotFound(err) && condition(getIndex(t, dropped.Namespace, "besluiten"), ragopsv1alpha1.ConditionWeaviateReader) == nil, client.IgnoreNotFound(err)
	})
	if _, err := open(droppedKey).Search(ctx, droppedCol, vectorstore.Query{Mode: vectorstore.ModeBM25, Text: "windenergie", Limit: 5}); err == nil {
		t.Error("the key of an Index whose Corpus dropped its access rules still reads")
	}

	// The Index goes: its key reads nothing.
	if err := env.Client.Delete(ctx, idx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the Index gone", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &ragopsv1alpha1.Index{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if hits, err := search(mine); err == nil {
		t.Errorf("the deleted Index's key still reads: %d hits", len(hits))
	}
}
