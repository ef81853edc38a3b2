package packaging

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/ragops/ragops/cmd"
)

// render builds a kustomization folder under config/ with the kustomize Go API (what
// `kubectl kustomize` runs) and returns its objects.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), repoPath("config", dir))
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		raw, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		out = append(out, u)
	}
	return out
}

// find returns the rendered object of a kind and name, decoded into into.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("rendered config has no %s %s", kind, name)
}

const (
	systemNS       = "ragops-system"
	managerName    = "ragops-controller-manager"
	serviceAccount = "ragops-controller-manager"
	clusterRole    = "ragops-manager-role"
)

// TestDefaultOverlayRendersAndDryRuns renders config/default and applies every object with
// server-side dry-run to a real kube-apiserver (schema, defaults and admission all run; the
// CRDs are the ones envtest installed from config/crd/bases).
func TestDefaultOverlayRendersAndDryRuns(t *testing.T) {
	objs := render(t, "default")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetKind(), "Cluster") && o.GetNamespace() != systemNS {
			t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), systemNS)
		}
		if o.GetLabels()["app.kubernetes.io/name"] != "ragops" {
			t.Errorf("%s %s lacks the app.kubernetes.io/name=ragops label", o.GetKind(), o.GetName())
		}
	}
	want := map[string]int{"Namespace": 1, "CustomResourceDefinition": 5, "ServiceAccount": 1, "ClusterRole": 3,
		"ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1, "Deployment": 1, "Service": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("rendered %d %s objects, want %d", kinds[k], k, n)
		}
	}
	if len(kinds) != len(want) {
		t.Errorf("rendered kinds %v, want exactly %v", kinds, want)
	}

	env := controlPlane(t)
	ctx := context.Background()
	c := env.Client
	// Namespaced objects can only be dry-run into an existing namespace.
	ns := &corev1.Namespace{}
	ns.Name = systemNS
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
		if err := c.Apply(ctx, ac, client.DryRunAll, client.FieldOwner("ragops-packaging-test"), client.ForceOwnership); err != nil {
			t.Errorf("server-side dry-run apply of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// Dry-run left nothing behind.
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: managerName}, &dep); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run created the Deployment (get: %v)", err)
	}
}

// TestManagerDeploymentMatchesTheBinary checks the rendered Deployment against the ragops
// command it runs: every argument is a real flag, leader election is on, the probes and the
// metrics Service reach the ports the flags bind, and the pod runs non-root and read-only
// with /tmp as its only writable path.
func TestManagerDeploymentMatchesTheBinary(t *testing.T) {
	objs := render(t, "default")
	var dep appsv1.Deployment
	find(t, objs, "Deployment", managerName, &dep)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if len(ctr.Args) == 0 || ctr.Args[0] != "manager" {
		t.Fatalf("args %v do not start with the manager subcommand", ctr.Args)
	}
	mgrCmd, _, err := cmd.NewRoot().Find([]string{"manager"})
	if err != nil || mgrCmd.Name() != "manager" {
		t.Fatalf("ragops has no manager command: %v", err)
	}
	if err := mgrCmd.ParseFlags(ctr.Args[1:]); err != nil {
		t.Fatalf("Deployment args %v: %v", ctr.Args[1:], err)
	}
	flag := func(name string) string {
		f := mgrCmd.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("manager has no --%s flag", name)
		}
		return f.Value.String()
	}
	if flag("leader-elect") != "true" {
		t.Error("leader election is off")
	}
	port := func(addr string) int32 {
		var p int32
		if _, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &p); err != nil {
			t.Fatalf("address %q: %v", addr, err)
		}
		return p
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	probePort, metricsPort := port(flag("health-probe-bind-address")), port(flag("metrics-bind-address"))
	if probePort != 8081 {
		t.Errorf("probes bind :%d, want :8081", probePort)
	}
	resolve := func(p intstr.IntOrString) int32 {
		if p.Type == intstr.String {
			return ports[p.StrVal]
		}
		return p.IntVal
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": ctr.LivenessProbe, "/readyz": ctr.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP probe for %s", name)
			continue
		}
		if probe.HTTPGet.Path != name || resolve(probe.HTTPGet.Port) != probePort {
			t.Errorf("probe %s:%v, want %s on %d", probe.HTTPGet.Path, probe.HTTPGet.Port.String(), name, probePort)
		}
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := ctr.Resources.Requests[res], ctr.Resources.Limits[res]
		if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
			t.Errorf("%s request %s limit %s: both must be set, request <= limit", res, req.String(), lim.String())
		}
	}
	psc, sc := pod.SecurityContext, ctr.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and runAsUser 65532 (the image's USER)", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, drop ALL", sc)
	}
	writable := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		if !m.ReadOnly {
			writable[m.MountPath] = true
		}
	}
	if !writable["/tmp"] || len(writable) != 1 {
		t.Errorf("writable mounts %v, want only /tmp", writable)
	}
	var workerImage string
	for _, e := range ctr.Env {
		if e.Name == "RAGOPS_WORKER_IMAGE" {
			workerImage = e.Value
		}
	}
	if workerImage != ctr.Image || !strings.Contains(ctr.Image, "/") {
		t.Errorf("RAGOPS_WORKER_IMAGE %q, want the manager's own image %q", workerImage, ctr.Image)
	}
	if pod.ServiceAccountName != serviceAccount {
		t.Errorf("serviceAccountName %q, want %s", pod.ServiceAccountName, serviceAccount)
	}

	var svc corev1.Service
	find(t, objs, "Service", "ragops-controller-manager-metrics", &svc)
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("metrics Service selects %s=%s, the pods have %q", k, v, dep.Spec.Template.Labels[k])
		}
	}
	if len(svc.Spec.Ports) != 1 || resolve(svc.Spec.Ports[0].TargetPort) != metricsPort {
		t.Errorf("metrics Service ports %+v do not reach the metrics port %d", svc.Spec.Ports, metricsPort)
	}

	var crb rbacv1.ClusterRoleBinding
	find(t, objs, "ClusterRoleBinding", "ragops-manager-rolebinding", &crb)
	var rb rbacv1.RoleBinding
	find(t, objs, "RoleBinding", "ragops-leader-election-rolebinding", &rb)
	for _, s := range append(crb.Subjects, rb.Subjects...) {
		if s.Kind != "ServiceAccount" || s.Name != serviceAccount || s.Namespace != systemNS {
			t.Errorf("binding subject %+v is not the manager's ServiceAccount %s/%s", s, systemNS, serviceAccount)
		}
	}
	if crb.RoleRef.Name != clusterRole {
		t.Errorf("ClusterRoleBinding grants %s, want the generated %s", crb.RoleRef.Name, clusterRole)
	}
}

// TestPrometheusServiceMonitorSelectsTheMetricsService renders the optional config/prometheus
// and checks its ServiceMonitor finds the metrics Service of config/default by labels and
// port name.
func TestPrometheusServiceMonitorSelectsTheMetricsService(t *testing.T) {
	mon := render(t, "prometheus")
	if len(mon) != 1 || mon[0].GetKind() != "ServiceMonitor" {
		t.Fatalf("config/prometheus renders %d objects, want one ServiceMonitor", len(mon))
	}
	var svc corev1.Service
	find(t, render(t, "default"), "Service", "ragops-controller-manager-metrics", &svc)
	if mon[0].GetNamespace() != svc.Namespace {
		t.Errorf("ServiceMonitor in %q, Service in %q", mon[0].GetNamespace(), svc.Namespace)
	}
	sel, _, _ := unstructured.NestedStringMap(mon[0].Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Fatal("ServiceMonitor selects nothing")
	}
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the Service has %q", k, v, svc.Labels[k])
		}
	}
	eps, _, _ := unstructured.NestedSlice(mon[0].Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints %v do not name the Service port %q", eps, svc.Spec.Ports[0].Name)
	}
}
