package specs

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/internal/workload"
)

// admits reports whether policy (in its namespace) admits a connection to a pod it selects
// from a pod with podLabels in a namespace named ns, on TCP port: NetworkPolicy's ingress
// semantics for namespace and pod selectors and ports (no ipBlocks here).
func admits(t *testing.T, p *networkingv1.NetworkPolicy, ns string, podLabels map[string]string, port int32) bool {
	t.Helper()
	match := func(s *metav1.LabelSelector, l map[string]string) bool {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel.Matches(labels.Set(l))
	}
	nsLabels := map[string]string{"kubernetes.io/metadata.name": ns}
	for _, rule := range p.Spec.Ingress {
		portOK := len(rule.Ports) == 0
		for _, rp := range rule.Ports {
			portOK = portOK || rp.Port.IntVal == port
		}
		if !portOK {
			continue
		}
		for _, peer := range rule.From {
			switch {
			case peer.NamespaceSelector == nil && peer.PodSelector != nil:
				if ns == p.Namespace && match(peer.PodSelector, podLabels) {
					return true
				}
			case peer.NamespaceSelector != nil:
				if match(peer.NamespaceSelector, nsLabels) && (peer.PodSelector == nil || match(peer.PodSelector, podLabels)) {
					return true
				}
			}
		}
	}
	return false
}

// Issue 52, direct reads bypass the filter: in front of a Weaviate serving Indexes with access
// rules, the NetworkPolicy admits to REST and gRPC only the manager pods, the workers and
// the endpoint of the Indexes' namespaces, and Weaviate's own pods to each other; any other
// pod (a user's pod in the same namespace, a worker-labelled pod elsewhere) is refused. The
// endpoint's objects are valid on a real kube-apiserver, its pods are not selected by the
// workers' deny-all policy, and it runs restricted with its ServiceAccount token.
func TestWeaviatePolicyAdmitsOnlyTheOperatorItsWorkersAndTheEndpoint(t *testing.T) {
	w := &Weaviate{Namespace: "weaviate", ManagerNamespace: "ragops-system", ClientNamespaces: []string{"archief", "archief", "team-b"}}
	p := w.Policy()
	worker := map[string]string{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: workload.ComponentEmbed}
	manager := map[string]string{"control-plane": "controller-manager"}
	cases := []struct {
		name   string
		ns     string
		labels map[string]string
		port   int32
		want   bool
	}{
		{"manager", "ragops-system", manager, 8080, true},
		{"manager gRPC", "ragops-system", manager, 50051, true},
		{"worker of an Index namespace", "archief", worker, 50051, true},
		{"endpoint", "team-b", Labels(), 50051, true},
		{"weaviate peer", "weaviate", DefaultWeaviatePods, 7000, true},
		{"user pod in an Index namespace", "archief", map[string]string{"app": "notebook"}, 8080, false},
		{"worker-labelled pod elsewhere", "other", worker, 8080, false},
		{"endpoint-labelled pod elsewhere", "other", Labels(), 50051, false},
		{"manager-labelled pod elsewhere", "archief", manager, 8080, false},
		{"other pod of Weaviate's namespace", "weaviate", map[string]string{"app": "backup"}, 8080, false},
		{"worker on another port", "archief", worker, 2112, false},
	}
	for _, tc := range cases {
		if got := admits(t, p, tc.ns, tc.labels, tc.port); got != tc.want {
			t.Errorf("%s (%s %v port %d): admitted %v, want %v", tc.name, tc.ns, tc.labels, tc.port, got, tc.want)
		}
	}
	if sel, _ := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector); !sel.Matches(labels.Set(DefaultWeaviatePods)) {
		t.Errorf("the policy does not select Weaviate's pods: %v", p.Spec.PodSelector)
	}

	e := &Endpoint{Namespace: "archief", Image: "ragops:dev", ConfigMap: "ragops-endpoint-config", WeaviateNamespaces: []string{"weaviate"}}
	if _, ok := e.Deployment().Spec.Template.Labels[workload.LabelManagedBy]; ok {
		t.Error("endpoint pods carry the worker label: the workers' deny-all policy would cut them off")
	}
	pod := e.Deployment().Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken || pod.ServiceAccountName != Name ||
		pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("endpoint pod: token %v, service account %q, security %+v", pod.AutomountServiceAccountToken, pod.ServiceAccountName, pod.SecurityContext)
	}

	env := testenv.StartTest(t)
	ctx := context.Background()
	for _, ns := range []string{"weaviate", "archief"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []client.Object{p, e.ServiceAccount(), e.Role(), e.RoleBinding(), e.ClusterRoleBinding(), e.Deployment(), e.Service(), e.NetworkPolicy()} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Errorf("%T %s: %v", o, o.GetName(), err)
		}
	}
	var got networkingv1.NetworkPolicy
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "weaviate", Name: WeaviatePolicyName}, &got); err != nil {
		t.Fatal(err)
	}
	if !admits(t, &got, "archief", worker, 50051) || admits(t, &got, "archief", map[string]string{"app": "notebook"}, 50051) {
		t.Error("the stored policy does not admit as built")
	}
}

// Issue 52, the demo: the endpoint listens on its pod's own address, as the model servers do,
// not on every address. On the local cluster's process node pods share the host's network:
// an endpoint on ":8080" and a model server on "$(POD_IP):8080" could not both listen
// (whichever came second failed to bind), so the endpoint of `make demo-access` never served.
func TestEndpointListensOnItsPodAddress(t *testing.T) {
	c := (&Endpoint{Namespace: "archief", Image: "ragops:dev"}).Deployment().Spec.Template.Spec.Containers[0]
	listen := ""
	for i, a := range c.Args {
		if a == "--listen" && i+1 < len(c.Args) {
			listen = c.Args[i+1]
		}
	}
	if listen != "$(POD_IP):8080" {
		t.Errorf("--listen %q, want $(POD_IP):8080 (args %v)", listen, c.Args)
	}
	// $(POD_IP) expands only from a variable defined in the container's env.
	if len(c.Env) == 0 || c.Env[0].Name != "POD_IP" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef == nil ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("env %+v: want POD_IP from status.podIP", c.Env)
	}
}
