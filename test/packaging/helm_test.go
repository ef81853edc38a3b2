package packaging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/cmd"
)

// chartDir is the Helm chart, relative to the repository root.
const chartDir = "charts/ragops"

// helmBinary returns the pinned Helm that hack/build-tools.sh builds into bin/.
func helmBinary(t *testing.T) string {
	t.Helper()
	p := repoPath("bin", "helm")
	if _, err := os.Stat(p); err != nil {
		need(t, "bin/helm is missing: run hack/build-tools.sh helm (make test does)")
	}
	return p
}

// runHelm runs the pinned helm in the repository root and returns its standard output.
func runHelm(t *testing.T, args ...string) []byte {
	t.Helper()
	c := exec.Command(helmBinary(t), args...)
	c.Dir = root
	c.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// helmTemplate renders the chart as release "ragops" in ragops-system with extra arguments
// (--set ...) and returns its objects, decoded the way render decodes kustomize's.
func helmTemplate(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out := runHelm(t, append([]string{"template", "ragops", chartDir, "--namespace", systemNS}, args...)...)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("helm template object: %v\n%s", err, raw)
		}
		objs = append(objs, u)
	}
	return objs
}

// key names an object.
func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// Labels and annotations only one of the two tools sets: Helm's release labels, the
// managed-by label (kustomize or Helm), and the keep policy of the chart's CRDs.
var (
	toolLabels      = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}
	toolAnnotations = []string{"helm.sh/resource-policy"}
)

// normalize returns the objects by key with the tool-specific labels and annotations
// removed, after checking managed-by names the tool.
func normalize(t *testing.T, objs []*unstructured.Unstructured, managedBy string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		o = o.DeepCopy()
		labels := o.GetLabels()
		if got := labels["app.kubernetes.io/managed-by"]; got != managedBy {
			t.Errorf("%s: app.kubernetes.io/managed-by=%q, want %q", key(o), got, managedBy)
		}
		for _, l := range toolLabels {
			delete(labels, l)
		}
		o.SetLabels(labels)
		if a := o.GetAnnotations(); a != nil {
			for _, k := range toolAnnotations {
				delete(a, k)
			}
			if len(a) == 0 {
				a = nil
			}
			o.SetAnnotations(a)
		}
		if _, dup := out[key(o)]; dup {
			t.Errorf("%s rendered twice", key(o))
		}
		out[key(o)] = o
	}
	return out
}

// compareRenderings checks that the chart renders exactly kustomize's objects (less the keys
// in skip), field for field.
func compareRenderings(t *testing.T, chart, kustomize []*unstructured.Unstructured, skip ...string) {
	t.Helper()
	h, k := normalize(t, chart, "Helm"), normalize(t, kustomize, "kustomize")
	for name, want := range k {
		if slices.Contains(skip, name) {
			continue
		}
		got, ok := h[name]
		if !ok {
			t.Errorf("config/default has %s, the chart does not render it", name)
			continue
		}
		if d := cmp.Diff(want.Object, got.Object); d != "" {
			t.Errorf("%s differs between config/default (-) and the chart (+):\n%s", name, d)
		}
	}
	for name := range h {
		if _, ok := k[name]; !ok {
			t.Errorf("the chart renders %s, config/default does not", name)
		}
	}
}

// TestHelmLint runs `helm lint --strict` on the chart with its defaults and with every option
// turned on.
func TestHelmLint(t *testing.T) {
	runHelm(t, "lint", "--strict", chartDir)
	runHelm(t, append([]string{"lint", "--strict", chartDir}, everyOption...)...)
}

// everyOption turns on every optional part of the chart.
var everyOption = []string{
	"--set", "namespace.create=true", "--set", "serviceMonitor.enabled=true", "--set", "dashboard.enabled=true",
	"--set", "watchNamespaces={team-a,team-b}", "--set", "leaderElection.enabled=false",
	"--set", "image.digest=sha256:" + strings.Repeat("ab", 32), "--set", "metrics.port=9090",
	"--set", "extraArgs={--index-concurrency=8}", "--set", "maxConcurrentSyncs=2", "--set", "tolerations[0].key=dedicated",
	"--set", "tolerations[0].operator=Exists", "--set", "nodeSelector.pool=system",
	"--set", "resources.limits.memory=1Gi", "--set", "networkPolicy.enabled=true",
}

// TestChartDefaultsRenderConfigDefault renders the chart with its default values and
// config/default with kustomize and compares every object field for field, whatever
// config/default holds: an object added to config/ and not to the chart (or the other way
// round) fails here. Only the Namespace is left out by default (Helm creates the release
// namespace with --create-namespace); with namespace.create=true it is compared too.
func TestChartDefaultsRenderConfigDefault(t *testing.T) {
	kust := render(t, "default")
	var nsKey string
	for _, o := range kust {
		if o.GetKind() == "Namespace" {
			nsKey = key(o)
		}
	}
	if nsKey == "" {
		t.Fatal("config/default renders no Namespace")
	}
	chart := helmTemplate(t)
	compareRenderings(t, chart, kust, nsKey)
	for _, o := range chart {
		if o.GetKind() == "CustomResourceDefinition" && o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s lacks helm.sh/resource-policy=keep (uninstalling would delete every object of its kind)", o.GetName())
		}
	}
	compareRenderings(t, helmTemplate(t, "--set", "namespace.create=true"), kust)
	if len(chart) < 10 {
		t.Errorf("the chart renders %d objects", len(chart))
	}
}

// TestChartServiceMonitorMatchesConfigPrometheus compares the chart's optional ServiceMonitor
// with config/prometheus's.
func TestChartServiceMonitorMatchesConfigPrometheus(t *testing.T) {
	var mon []*unstructured.Unstructured
	for _, o := range helmTemplate(t, "--set", "serviceMonitor.enabled=true") {
		if o.GetKind() == "ServiceMonitor" {
			mon = append(mon, o)
		}
	}
	want := render(t, "prometheus")
	for _, o := range want { // config/prometheus is not under config/default's labels
		l := o.GetLabels()
		l["app.kubernetes.io/managed-by"] = "kustomize"
		o.SetLabels(l)
	}
	compareRenderings(t, mon, want)
}

// TestChartNetworkPolicyMatchesConfig: with networkPolicy.enabled the chart renders the
// manager's NetworkPolicy of config/network-policy, and it follows metrics.port; by default it
// renders none (config/default has none either).
func TestChartNetworkPolicyMatchesConfig(t *testing.T) {
	var pols []*unstructured.Unstructured
	for _, o := range helmTemplate(t, "--set", "networkPolicy.enabled=true") {
		if o.GetKind() == "NetworkPolicy" {
			pols = append(pols, o)
		}
	}
	compareRenderings(t, pols, render(t, "network-policy"))
	for _, o := range helmTemplate(t) {
		if o.GetKind() == "NetworkPolicy" {
			t.Errorf("default values render NetworkPolicy %s", o.GetName())
		}
	}
	for _, o := range helmTemplate(t, "--set", "networkPolicy.enabled=true", "--set", "metrics.port=9090") {
		if o.GetKind() != "NetworkPolicy" {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ingress")
		if got := fmt.Sprint(ports); !strings.Contains(got, "port:9090") {
			t.Errorf("ingress %s does not follow metrics.port=9090", got)
		}
	}
}

// TestChartValuesReachTheManager renders the chart with every option on and checks the
// Deployment against the ragops binary's flags: the arguments parse, the watched namespaces
// and the metrics port reach the flags, the Service and the pod; the digest pins the manager
// and the worker image; leader election off drops its Role; scheduling values land on the pod;
// the dashboard ConfigMap holds config/grafana's JSON.
func TestChartValuesReachTheManager(t *testing.T) {
	objs := helmTemplate(t, everyOption...)
	var dep appsv1.Deployment
	find(t, objs, "Deployment", managerName, &dep)
	ctr := dep.Spec.Template.Spec.Containers[0]
	mgrCmd, _, err := cmd.NewRoot().Find([]string{"manager"})
	if err != nil {
		t.Fatal(err)
	}
	if ctr.Args[0] != "manager" {
		t.Fatalf("args %v", ctr.Args)
	}
	if err := mgrCmd.ParseFlags(ctr.Args[1:]); err != nil {
		t.Fatalf("Deployment args %v: %v", ctr.Args[1:], err)
	}
	flag := func(name string) string { return mgrCmd.Flags().Lookup(name).Value.String() }
	if got := flag("watch-namespaces"); got != "[team-a,team-b]" {
		t.Errorf("--watch-namespaces = %s, want [team-a,team-b]", got)
	}
	if flag("leader-elect") != "false" || flag("index-concurrency") != "8" || flag("metrics-bind-address") != ":9090" {
		t.Errorf("leader-elect %s, index-concurrency %s, metrics-bind-address %s; want false, 8, :9090",
			flag("leader-elect"), flag("index-concurrency"), flag("metrics-bind-address"))
	}
	pinned := "ghcr.io/ragops/ragops@sha256:" + strings.Repeat("ab", 32)
	if ctr.Image != pinned {
		t.Errorf("image %s, want %s", ctr.Image, pinned)
	}
	for _, e := range ctr.Env {
		if e.Name == "RAGOPS_WORKER_IMAGE" && e.Value != pinned {
			t.Errorf("RAGOPS_WORKER_IMAGE %s, want the pinned %s", e.Value, pinned)
		}
	}
	if ctr.Ports[0].ContainerPort != 9090 {
		t.Errorf("metrics containerPort %d, want 9090", ctr.Ports[0].ContainerPort)
	}
	pod := dep.Spec.Template.Spec
	if pod.NodeSelector["pool"] != "system" || pod.NodeSelector["kubernetes.io/os"] != "linux" ||
		len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" || pod.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("nodeSelector %v tolerations %+v", pod.NodeSelector, pod.Tolerations)
	}
	if m := ctr.Resources.Limits[corev1.ResourceMemory]; m.String() != "1Gi" {
		t.Errorf("memory limit %s, want 1Gi", m.String())
	}
	var svc corev1.Service
	find(t, objs, "Service", "ragops-controller-manager-metrics", &svc)
	if svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("metrics Service port %d, want 9090", svc.Spec.Ports[0].Port)
	}
	for _, o := range objs {
		if o.GetKind() == "Role" || o.GetKind() == "RoleBinding" {
			t.Errorf("leader election off, yet the chart renders %s", key(o))
		}
	}
	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "ragops-dashboard", &cm)
	want, err := os.ReadFile(repoPath("config", "grafana", "ragops-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(cm.Data["ragops.json"]) != strings.TrimSpace(string(want)) {
		t.Error("the dashboard ConfigMap does not hold config/grafana/ragops-dashboard.json")
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard=1", cm.Labels)
	}

	// A worker image of its own overrides the pin for the Jobs only.
	objs = helmTemplate(t, "--set", "workerImage=registry.local/ragops-worker:gpu", "--set", "image.tag=v0.3.1")
	find(t, objs, "Deployment", managerName, &dep)
	ctr = dep.Spec.Template.Spec.Containers[0]
	if ctr.Image != "ghcr.io/ragops/ragops:v0.3.1" || ctr.Env[0].Name != "RAGOPS_WORKER_IMAGE" || ctr.Env[0].Value != "registry.local/ragops-worker:gpu" {
		t.Errorf("image %s, env %+v", ctr.Image, ctr.Env)
	}
}

// TestChartServerSideDryRun applies every object the chart renders (the Namespace, the
// dashboard ConfigMap and the manager with every option but the ServiceMonitor, whose CRD the
// API server lacks) to envtest's kube-apiserver with server-side dry-run: schema, defaults and
// admission all run.
func TestChartServerSideDryRun(t *testing.T) {
	var opts []string
	for i := 0; i < len(everyOption); i += 2 {
		if everyOption[i+1] != "serviceMonitor.enabled=true" {
			opts = append(opts, everyOption[i], everyOption[i+1])
		}
	}
	for _, args := range [][]string{nil, opts} {
		objs := helmTemplate(t, args...)
		env := controlPlane(t)
		ctx := context.Background()
		ns := &corev1.Namespace{}
		ns.Name = systemNS
		if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		for _, o := range objs {
			ac := client.ApplyConfigurationFromUnstructured(o.DeepCopy())
			if err := env.Client.Apply(ctx, ac, client.DryRunAll, client.FieldOwner("ragops-helm-test"), client.ForceOwnership); err != nil {
				t.Errorf("server-side dry-run apply of %s: %v", key(o), err)
			}
		}
		var dep appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: managerName}, &dep); !apierrors.IsNotFound(err) {
			t.Errorf("dry-run created the Deployment (get: %v)", err)
		}
	}
}
