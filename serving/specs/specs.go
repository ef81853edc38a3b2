// Package specs builds the Kubernetes objects of a managed model server (ragops serve): a
// Deployment and a Service per (model folder, precision, device), a NetworkPolicy that admits
// Weaviate and the namespace's pods only, and a PodDisruptionBudget when it runs more than one
// replica. The builders are pure: they take everything they need in [Server] and call no API.
package specs

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Port is the model server's HTTP port (its API, probes and /metrics), in the pod and on the
// Service.
const Port = 8080

// PodIPEnv is the container's variable holding its pod's address (the downward API's
// status.podIP). The server listens on $(POD_IP):Port, not on every address: the kubelet's
// probes and the Service reach a pod at its podIP, so nothing changes in a cluster where each
// pod has its own network namespace, and on the local cluster's process node (hack/localnode),
// where pods share the host's network but each has its own loopback address, two replicas on one
// node can then both listen on Port. A consequence: `kubectl port-forward` (which connects to
// localhost inside the pod) does not reach the server; use the Service from a pod instead.
const PodIPEnv = "POD_IP"

// LabelServer is the label that selects a model server's pods; its value is the server's name.
const LabelServer = "ragops.dev/model-server"

// Default requests of the model server container where spec.serving.resources sets none.
var (
	DefaultCPURequest    = resource.MustParse("500m")
	DefaultMemoryRequest = resource.MustParse("512Mi")
)

// GPUResource is the extended resource a cuda model server requests, one per pod.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Server is everything one model server's objects are built from.
type Server struct {
	// Name of the Deployment, Service, NetworkPolicy and PodDisruptionBudget (a DNS label).
	Name, Namespace string
	// Labels go on every object and pod (the selector label LabelServer is added).
	Labels map[string]string
	// Owners are the owner references of every object.
	Owners []metav1.OwnerReference
	// Image holds the ragops binary.
	Image string
	// ModelDir is the model folder's path in the container; Volumes, Mounts, Init and Env
	// bring it there (a PVC, an HTTP archive fetched by an init container, or the image).
	ModelDir string
	Volumes  []corev1.Volume
	Mounts   []corev1.VolumeMount
	Init     []corev1.Container
	Env      []corev1.EnvVar
	// Device is "cpu" or "cuda"; cuda requests GPUResource: 1.
	Device string
	// Precision is "fp32" or "fp16".
	Precision string
	// Replicas of the Deployment (at least 1).
	Replicas int32
	// Resources of the container; unset CPU and memory requests take the defaults.
	Resources    corev1.ResourceRequirements
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// WeaviateNamespaces are the namespaces whose pods (Weaviate) the NetworkPolicy admits
	// besides the server's own namespace.
	WeaviateNamespaces []string
	// ManagerNamespace is the operator's namespace: its manager pods (ManagerPodLabels) are
	// admitted too, to read /meta (the loaded model's hash). Empty admits none from there.
	ManagerNamespace string
}

// ManagerPodLabels select the operator's manager pods (config/manager and the Helm chart
// label them so).
var ManagerPodLabels = map[string]string{"control-plane": "controller-manager"}

// Endpoint is the base URL of the server's Service inside the cluster.
func (s *Server) Endpoint() string {
	return fmt.Sprintf("http://%s.%s.svc:%d", s.Name, s.Namespace, Port)
}

// Paths under a server's base URL that fix the task of every text posted below them
// (POST <path>/vectors, Weaviate's text2vec-transformers API), whatever task_type the request
// carries or lacks: a collection's queryInferenceUrl and passageInferenceUrl.
const (
	QueryPath   = "/query"
	PassagePath = "/passage"
)

// QueryURL is the queryInferenceUrl of a collection served by the server at endpoint.
func QueryURL(endpoint string) string { return endpoint + QueryPath }

// PassageURL is the passageInferenceUrl of a collection served by the server at endpoint.
func PassageURL(endpoint string) string { return endpoint + PassagePath }

func (s *Server) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: s.labels(), OwnerReferences: append([]metav1.OwnerReference(nil), s.Owners...)}
}

func (s *Server) labels() map[string]string {
	l := maps.Clone(s.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, s.selector())
	return l
}

func (s *Server) selector() map[string]string { return map[string]string{LabelServer: s.Name} }

// Threads is the ONNX Runtime intra-op thread count of a container with resources r: its CPU
// limit, else its CPU request, rounded up, at least 1 (one thread per host core would
// oversubscribe a container's CPU quota).
func Threads(r corev1.ResourceRequirements) int {
	q, ok := r.Limits[corev1.ResourceCPU]
	if !ok {
		q, ok = r.Requests[corev1.ResourceCPU]
	}
	if !ok {
		q = DefaultCPURequest
	}
	return max(1, int((q.MilliValue()+999)/1000))
}

func (s *Server) resources() corev1.ResourceRequirements {
	r := *s.Resources.DeepCopy()
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, def := range map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: DefaultCPURequest, corev1.ResourceMemory: DefaultMemoryRequest} {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if lim, ok := r.Limits[name]; ok && lim.Cmp(def) < 0 {
			def = lim // a request may not exceed its limit
		}
		r.Requests[name] = def
	}
	if s.Device == "cuda" {
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[GPUResource] = resource.MustParse("1")
	}
	return r
}

// Deployment returns the model server's Deployment: stateless (HPA-ready, CPU requested),
// probed on /.well-known/ready and /.well-known/live, draining for 5 s on SIGTERM while
// readiness answers 503. Pod security is left to the caller (the controller restricts it like
// its workers), except for the writable /tmp the restricted profile's read-only root needs.
func (s *Server) Deployment() *appsv1.Deployment {
	res := s.resources()
	args := []string{"serve", "--model-dir", s.ModelDir, "--listen", "$(" + PodIPEnv + "):" + strconv.Itoa(Port),
		"--device", s.Device, "--precision", s.Precision, "--threads", strconv.Itoa(Threads(res)), "--drain-delay", "5s"}
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			PeriodSeconds: period, FailureThreshold: 3, TimeoutSeconds: 2}
	}
	mounts := append(append([]corev1.VolumeMount(nil), s.Mounts...), corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	volumes := append(append([]corev1.Volume(nil), s.Volumes...), corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	replicas := max(s.Replicas, 1)
	return &appsv1.Deployment{
		ObjectMeta: s.meta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: s.selector()},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: s.labels()},
				Spec: corev1.PodSpec{
					InitContainers: append([]corev1.Container(nil), s.Init...),
					Containers: []corev1.Container{{
						Name: "serve", Image: s.Image, Command: []string{"ragops"}, Args: args,
						Env: append([]corev1.EnvVar{{Name: PodIPEnv, ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}, s.Env...),
						Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: Port, Protocol: corev1.ProtocolTCP}},
						Resources:      res,
						VolumeMounts:   mounts,
						ReadinessProbe: probe("/.well-known/ready", 5),
						LivenessProbe:  probe("/.well-known/live", 10),
					}},
					Volumes:                       volumes,
					NodeSelector:                  maps.Clone(s.NodeSelector),
					Tolerations:                   append([]corev1.Toleration(nil), s.Tolerations...),
					TerminationGracePeriodSeconds: ptr.To[int64](45),
				},
			},
		},
	}
}

// Service returns the ClusterIP Service in front of the server's pods, port Port named http.
func (s *Server) Service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: s.meta(),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: s.selector(),
			Ports:    []corev1.ServicePort{{Name: "http", Port: Port, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// NetworkPolicy admits traffic to the server's port from the pods of its own namespace, of
// WeaviateNamespaces and the manager pods of ManagerNamespace only (namespaces matched by
// the kubernetes.io/metadata.name label every namespace carries).
func (s *Server) NetworkPolicy() *networkingv1.NetworkPolicy {
	peers := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	seen := map[string]bool{s.Namespace: true}
	for _, ns := range s.WeaviateNamespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		peers = append(peers, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
		}})
	}
	if ns := s.ManagerNamespace; ns != "" && ns != s.Namespace {
		peers = append(peers, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(ManagerPodLabels)},
		})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: s.meta(),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: s.selector()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  peers,
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(Port))}},
			}},
		},
	}
}

// PodDisruptionBudget keeps all but one replica up through voluntary disruptions (node
// drains); nil for a single replica, which a budget would make undrainable.
func (s *Server) PodDisruptionBudget() *policyv1.PodDisruptionBudget {
	if s.Replicas <= 1 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: s.meta(),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: s.selector()},
		},
	}
}

// WeaviateNamespace returns the namespace of an in-cluster Weaviate URL's Service
// (http://NAME.NAMESPACE[.svc[.cluster.local]]:PORT), or ns for a bare Service name. ok is
// false for any other host (an IP, an external name): no namespace can be admitted for it.
func WeaviateNamespace(rawURL, ns string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return "", false
	}
	parts := strings.Split(strings.TrimSuffix(u.Hostname(), "."), ".")
	switch {
	case len(parts) == 1 && parts[0] != "localhost":
		return ns, true
	case len(parts) == 2,
		len(parts) == 3 && parts[2] == "svc",
		len(parts) >= 4 && parts[2] == "svc":
		return parts[1], true
	}
	return "", false
}
