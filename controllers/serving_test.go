package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/serving/specs"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// modelHashes holds, per namespace, how the suite's manager reads /meta of that namespace's
// model servers (fakeModelHash); other endpoints are read over HTTP.
var modelHashes sync.Map // namespace -> func(endpoint string) (string, error)

// testModelServers is the suite manager's ModelServerClient.
type testModelServers struct{}

func (testModelServers) ModelHash(ctx context.Context, endpoint string) (string, error) {
	var fn func(string) (string, error)
	modelHashes.Range(func(ns, f any) bool {
		if strings.Contains(endpoint, "."+ns.(string)+".svc") {
			fn = f.(func(string) (string, error))
			return false
		}
		return true
	})
	if fn != nil {
		return fn(endpoint)
	}
	return controllers.HTTPModelServerClient{}.ModelHash(ctx, endpoint)
}

// fakeModelHash makes the model servers of ns report hash on /meta for the rest of the test.
func fakeModelHash(t *testing.T, ns, hash string) {
	modelHashes.Store(ns, func(string) (string, error) { return hash, nil })
	t.Cleanup(func() { modelHashes.Delete(ns) })
}

// modelServer waits for the one model server Deployment in ns and returns it.
func modelServer(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	var deps appsv1.DeploymentList
	eventually(t, 30*time.Second, "a model server Deployment", func() (bool, error) {
		err := env.Client.List(context.Background(), &deps, client.InNamespace(ns), client.MatchingLabels{workload.LabelComponent: "model-server"})
		return err == nil && len(deps.Items) == 1, err
	})
	return &deps.Items[0]
}

func setReadyReplicas(t *testing.T, dep *appsv1.Deployment, n int32) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = *dep.Spec.Replicas, n, n
	if err := env.Client.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
}

func waitServingReady(t *testing.T, ns, name string, want metav1.ConditionStatus) *ragopsv1alpha1.Index {
	t.Helper()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "ServingReady="+string(want), func() (bool, error) {
		idx = getIndex(t, ns, name)
		c := condition(idx, ragopsv1alpha1.ConditionServingReady)
		return c != nil && c.Status == want, nil
	})
	return idx
}

// TestModelServerShared: an Index gets a model server (restricted Deployment with a CPU
// request, Service, NetworkPolicy, no PDB at one replica); a second Index with the same model
// shares it (the Deployment counts both; no owner reference per Index); ServingReady is False while the Deployment has no ready replica
// and stays False with a ready one, naming what to set on the suite's Weaviate, which lacks
// the text2vec-transformers module; two replicas add a PDB; the
// server is deleted once neither Index needs it.
func TestModelServerShared(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	fixture(t, ns, nil)
	_, second := strategyAndIndex(ns)
	second.Name = "tweede"
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	dep := modelServer(t, ns)
	eventually(t, 30*time.Second, "the model server serving both Indexes", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.Annotations[controllers.AnnotationServerIndexes] == "2", err
	})
	if len(dep.OwnerReferences) != 0 {
		t.Errorf("owners %v: want none (the model server is labelled, not owned per Index)", dep.OwnerReferences)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) || ptr.Deref(pod.AutomountServiceAccountToken, true) ||
		!ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false) || ptr.Deref(c.SecurityContext.AllowPrivilegeEscalation, true) {
		t.Errorf("pod not restricted: %+v %+v", pod.SecurityContext, c.SecurityContext)
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.IsZero() {
		t.Errorf("no CPU request: %+v", c.Resources)
	}
	if i := slices.Index(c.Args, "--model-dir"); c.Image != "ragops:test" || i < 0 || c.Args[i+1] != "/models/all-minilm-l6-v2" {
		t.Errorf("container %s %v", c.Image, c.Args)
	}
	var svc corev1.Service
	var np networkingv1.NetworkPolicy
	for _, o := range []client.Object{&svc, &np} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), o); err != nil {
			t.Fatalf("%T: %v", o, err)
		}
	}
	if svc.Spec.Selector[specs.LabelServer] != dep.Name || svc.Spec.Ports[0].Port != specs.Port {
		t.Errorf("service %+v", svc.Spec)
	}
	var pdb policyv1.PodDisruptionBudget
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &pdb); !apierrors.IsNotFound(err) {
		t.Errorf("PDB at one replica: %v", err)
	}

	idx := waitServingReady(t, ns, "besluiten", metav1.ConditionFalse)
	want := fmt.Sprintf("http://%s.%s.svc:%d", dep.Name, ns, specs.Port)
	if s := idx.Status.Serving; s == nil || s.Endpoint != want || s.Deployment != dep.Name || s.ReadyReplicas != 0 {
		t.Errorf("status.serving %+v, want endpoint %s", s, want)
	}
	setReadyReplicas(t, dep, 1)
	// A ready server that the suite's Weaviate (no text2vec-transformers) never calls serves
	// no query: ServingReady stays False and says what to set.
	eventually(t, 30*time.Second, "status.serving with the ready replica", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return idx.Status.Serving != nil && idx.Status.Serving.ReadyReplicas == 1, nil
	})
	cond := condition(idx, ragopsv1alpha1.ConditionServingReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != controllers.ReasonTransformersModuleMissing {
		t.Fatalf("ServingReady %+v with a ready replica on a Weaviate without the module: want False, TransformersModuleMissing", cond)
	}
	for _, want := range []string{"ENABLE_MODULES=text2vec-transformers", "TRANSFORMERS_INFERENCE_API=" + want, "1/1 replicas ready"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("ServingReady message %q does not say %q", cond.Message, want)
		}
	}
	// Two replicas: a PodDisruptionBudget.
	base := getIndex(t, ns, "besluiten")
	patch := client.MergeFrom(base.DeepCopy())
	base.Spec.Serving.Replicas = 2
	if err := env.Client.Patch(ctx, base, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a PodDisruptionBudget", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &pdb)
		return err == nil && pdb.Spec.MaxUnavailable.IntVal == 1, err
	})
	// Neither Index needs it any more: the server goes.
	for _, name := range []string{"besluiten", "tweede"} {
		ix := getIndex(t, ns, name)
		patch := client.MergeFrom(ix.DeepCopy())
		ix.Spec.Serving.Enabled = ptr.To(false)
		if err := env.Client.Patch(ctx, ix, patch); err != nil {
			t.Fatal(err)
		}
		if name == "besluiten" {
			eventually(t, 30*time.Second, "the second Index as the server's sole user", func() (bool, error) {
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
				return err == nil && dep.Annotations[controllers.AnnotationServerIndexes] == "1" && dep.Annotations["ragops.dev/settings-from"] == "tweede", err
			})
		}
	}
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}} {
		eventually(t, 30*time.Second, fmt.Sprintf("%T deleted", o), func() (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), o)
			return apierrors.IsNotFound(err), nil
		})
	}
	if ix := getIndex(t, ns, "besluiten"); ix.Status.Serving != nil || condition(ix, ragopsv1alpha1.ConditionServingReady) != nil {
		t.Errorf("serving disabled: status.serving %+v, ServingReady %+v", ix.Status.Serving, condition(ix, ragopsv1alpha1.ConditionServingReady))
	}
}

// buildWired plays the build of the first revision of fixture's Index on a Weaviate with
// text2vec-transformers: it checks that the plan names the model server, creates the
// collection wired to it, writes a chunk and finishes the Job reporting modelHash.
func buildWired(t *testing.T, srv *weaviatetest.Server, ns, modelHash string) (dep *appsv1.Deployment, rev ragopsv1alpha1.RevisionStatus, s *vectorstore.Store) {
	t.Helper()
	return buildWiredTo(t, srv, ns, modelHash, nil)
}

// buildWiredTo is buildWired with the collection wired by wire (nil: as the build does, to
// the plan's model server's query and passage paths).
func buildWiredTo(t *testing.T, srv *weaviatetest.Server, ns, modelHash string, wire func(modelServer string) vectorstore.Transformers) (dep *appsv1.Deployment, rev ragopsv1alpha1.RevisionStatus, s *vectorstore.Store) {
	t.Helper()
	if wire == nil {
		wire = func(m string) vectorstore.Transformers {
			return vectorstore.Transformers{PassageURL: specs.PassageURL(m), QueryURL: specs.QueryURL(m)}
		}
	}
	ctx := context.Background()
	fixture(t, ns, func(ix *ragopsv1alpha1.Index) {
		ix.Spec.Weaviate = ragopsv1alpha1.WeaviateSpec{URL: "http://" + srv.HTTPAddr, GRPCAddress: srv.GRPCAddr}
	})
	dep = modelServer(t, ns)
	endpoint := fmt.Sprintf("http://%s.%s.svc:%d", dep.Name, ns, specs.Port)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		r := idx.Status.Revisions
		return len(r) == 1 && r[0].Phase == ragopsv1alpha1.RevisionBuilding, nil
	})
	rev = idx.Status.Revisions[0]
	job := waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev.Name))
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.ModelServer != endpoint {
		t.Fatalf("plan modelServer %q, want %q", p.ModelServer, endpoint)
	}
	s, err := vectorstore.New(vectorstore.Config{HTTPHost: srv.HTTPAddr, GRPCHost: srv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	spec := vectorstore.CollectionSpec{Name: rev.Collection, Revision: rev.Name, Dimensions: dims,
		Vectorizer: wire(p.ModelServer)}
	if err := s.EnsureCollection(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	for d, doc := range []string{"a.md", "b.md", "c.md"} { // fixture's three documents
		v := make([]float32, dims)
		v[d] = 1
		chunks = append(chunks, vectorstore.Chunk{DocID: doc, Text: doc, End: 1, Vector: v})
	}
	if err := s.Upsert(ctx, rev.Collection, chunks); err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 3, Tokens: 30, Seconds: 1, ModelHash: modelHash})
	finishJob(t, job, 0, string(msg))
	return dep, rev, s
}

// TestAliasWaitsForModelServer: against a Weaviate with text2vec-transformers, the build plan
// wires the revision's collection to its model server, and the revision takes the alias only
// once that server's Deployment has a ready replica.
func TestAliasWaitsForModelServer(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	ns := newNamespace(t)
	ctx := context.Background()
	dep, rev, s := buildWired(t, srv, ns, "")
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "the revision waiting for its model server", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return c != nil && c.Reason == controllers.ReasonModelServerNotReady, nil
	})
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	if _, found, err := s.GetAlias(ctx, alias); err != nil || found || idx.Status.ActiveRevision != "" {
		t.Fatalf("alias found=%v (%v), active %q before the model server is ready", found, err, idx.Status.ActiveRevision)
	}
	setReadyReplicas(t, dep, 1)
	eventually(t, 30*time.Second, "the alias on the revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return idx.Status.ActiveRevision == rev.Name, nil
	})
	target, found, err := s.GetAlias(ctx, alias)
	if err != nil || !found || target != rev.Collection {
		t.Fatalf("alias -> %q found=%v (%v), want %s", target, found, err, rev.Collection)
	}
	if c := condition(idx, ragopsv1alpha1.ConditionServingReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != controllers.ReasonModelServerReady {
		t.Errorf("ServingReady %+v", c)
	}
}

// TestModelHashMismatchKeepsTheAlias: the build records the model folder's hash; a ready
// model server whose /meta reports another is refused: no alias, ServingReady and Ready name
// both hashes.
func TestModelHashMismatchKeepsTheAlias(t *testing.T) {
	srv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	ns := newNamespace(t)
	ctx := context.Background()
	const built, served = "sha256:0123built", "sha256:4567served"
	fakeModelHash(t, ns, served)
	dep, rev, s := buildWired(t, srv, ns, built)
	setReadyReplicas(t, dep, 1)
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "the mismatch named", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		c := condition(idx, ragopsv1alpha1.ConditionServingReady)
		if c != nil && c.Reason != controllers.ReasonModelHashMismatch {
			return false, fmt.Errorf("ServingReady %+v, revisions %+v, serving %+v", c, idx.Status.Revisions, idx.Status.Serving)
		}
		return c != nil, nil
	})
	c := condition(idx, ragopsv1alpha1.ConditionServingReady)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, built) || !strings.Contains(c.Message, served) || !strings.Contains(c.Message, dep.Name) {
		t.Errorf("ServingReady %+v: want False naming %s, %s and %s", c, dep.Name, built, served)
	}
	if got := idx.Status.Revisions[0].ModelHash; got != built {
		t.Errorf("revision modelHash %q, want %q", got, built)
	}
	if idx.Status.Serving == nil || idx.Status.Serving.ModelHash != served {
		t.Errorf("status.serving %+v, want modelHash %s", idx.Status.Serving, served)
	}
	eventually(t, 30*time.Second, "Ready naming the mismatch", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		r := condition(idx, ragopsv1alpha1.ConditionReady)
		return r != nil && r.Reason == controllers.ReasonModelHashMismatch && r.Status == metav1.ConditionFalse, nil
	})
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	if _, found, err := s.GetAlias(ctx, alias); err != nil || found || idx.Status.ActiveRevision != "" {
		t.Fatalf("alias found=%v (%v), active %q for revision %s with another model's server", found, err, idx.Status.ActiveRevision, rev.Name)
	}
}
