package packaging

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/serving/specs"
)

// egressPorts returns the set of "PROTO/port" over every egress rule of np.
func egressPorts(np networkingv1.NetworkPolicy) map[string]bool {
	out := map[string]bool{}
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			out[string(*p.Protocol)+"/"+p.Port.String()] = true
		}
	}
	return out
}

// dryRun server-side dry-runs objects into namespace ns (created when missing).
func dryRun(t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	env := controlPlane(t)
	ctx := context.Background()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := env.Client.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetNamespace() == "" {
			o.SetNamespace(ns)
		}
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.FieldOwner("ragops-packaging-test"), client.ForceOwnership); err != nil {
			t.Errorf("server-side dry-run apply of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// The manager's NetworkPolicy selects the manager pods of config/default, admits ingress only
// on the metrics port the Deployment exposes, and allows egress only to DNS, the API server
// ports and Weaviate's REST and gRPC ports; it dry-runs against a real kube-apiserver.
func TestManagerNetworkPolicyRendersAndDryRuns(t *testing.T) {
	objs := render(t, "network-policy")
	if len(objs) != 1 || objs[0].GetKind() != "NetworkPolicy" || objs[0].GetNamespace() != systemNS {
		t.Fatalf("config/network-policy renders %d objects, want one NetworkPolicy in %s", len(objs), systemNS)
	}
	var np networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "ragops-controller-manager", &np)
	var dep appsv1.Deployment
	find(t, render(t, "default"), "Deployment", managerName, &dep)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Fatalf("podSelector %v (err %v) does not select the manager pods %v", np.Spec.PodSelector, err, dep.Spec.Template.Labels)
	}
	if len(np.Spec.PolicyTypes) != 2 {
		t.Errorf("policyTypes %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	var metricsPort int32
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			metricsPort = p.ContainerPort
		}
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != metricsPort || len(np.Spec.Ingress[0].From) == 0 {
		t.Errorf("ingress %+v, want one rule: the metrics port %d from selected namespaces", np.Spec.Ingress, metricsPort)
	}
	got := egressPorts(np)
	want := map[string]bool{"UDP/53": true, "TCP/53": true, "TCP/443": true, "TCP/6443": true, "TCP/8080": true, "TCP/50051": true}
	if len(got) != len(want) {
		t.Errorf("egress ports %v, want exactly %v", got, want)
	}
	for p := range want {
		if !got[p] {
			t.Errorf("egress lacks %s", p)
		}
	}
	// The manager reads /meta from model servers in any namespace: the pods the controller
	// labels so (as an Index's serving reconcile does), on the server's port.
	srv := specs.Server{Name: "ragops-serve-0", Namespace: "team-a", Replicas: 1,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "ragops", "app.kubernetes.io/component": "model-server"}}
	podLabels := labels.Set(srv.Deployment().Spec.Template.Labels)
	admitted := false
	for _, r := range np.Spec.Egress {
		for _, to := range r.To {
			ps, err := metav1.LabelSelectorAsSelector(to.PodSelector)
			if to.PodSelector == nil || err != nil || ps.Empty() || !ps.Matches(podLabels) || to.NamespaceSelector == nil || len(to.NamespaceSelector.MatchLabels) != 0 {
				continue
			}
			for _, p := range r.Ports {
				admitted = admitted || p.Port.IntVal == specs.Port
			}
		}
	}
	if !admitted {
		t.Errorf("no egress rule reaches model server pods %v in any namespace on port %d", podLabels, specs.Port)
	}
	dryRun(t, objs, systemNS)
}

// The workers' NetworkPolicies select the pods of every Job the controllers create (label
// app.kubernetes.io/managed-by: ragops), deny all ingress, and allow egress to DNS, Weaviate
// and sources outside the private ranges only; they dry-run into a user namespace.
func TestWorkerNetworkPoliciesRenderAndDryRun(t *testing.T) {
	objs := render(t, "network-policy/workers")
	if len(objs) != 2 {
		t.Fatalf("config/network-policy/workers renders %d objects, want 2", len(objs))
	}
	workerLabels := labels.Set{workload.LabelManagedBy: "ragops", workload.LabelComponent: "embed"}
	for _, name := range []string{"ragops-workers", "ragops-workers-sources"} {
		var np networkingv1.NetworkPolicy
		find(t, objs, "NetworkPolicy", name, &np)
		if np.Namespace != "" {
			t.Errorf("%s has namespace %q: it must take the namespace it is applied to", name, np.Namespace)
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(workerLabels) {
			t.Errorf("%s podSelector %v does not select worker pods", name, np.Spec.PodSelector)
		}
		if sel.Matches(labels.Set{"app": "something-else"}) {
			t.Errorf("%s selects pods that are not ragops workers", name)
		}
	}
	var deny networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "ragops-workers", &deny)
	if len(deny.Spec.Ingress) != 0 || len(deny.Spec.PolicyTypes) != 2 {
		t.Errorf("ragops-workers ingress %v policyTypes %v: want Ingress with no rule (deny all)", deny.Spec.Ingress, deny.Spec.PolicyTypes)
	}
	if got := egressPorts(deny); len(got) != 4 || !got["TCP/8080"] || !got["TCP/50051"] || !got["UDP/53"] {
		t.Errorf("ragops-workers egress ports %v, want DNS and Weaviate only", got)
	}
	var src networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "ragops-workers-sources", &src)
	if len(src.Spec.Egress) != 1 || len(src.Spec.Egress[0].To) != 1 || src.Spec.Egress[0].To[0].IPBlock == nil {
		t.Fatalf("ragops-workers-sources egress %+v, want one ipBlock rule", src.Spec.Egress)
	}
	except := src.Spec.Egress[0].To[0].IPBlock.Except
	for _, private := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} {
		found := false
		for _, e := range except {
			found = found || e == private
		}
		if !found {
			t.Errorf("ragops-workers-sources does not except %s (cluster and metadata addresses)", private)
		}
	}
	dryRun(t, objs, "team-a")
}
