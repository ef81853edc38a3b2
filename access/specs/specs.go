// Package specs builds the Kubernetes objects of the access endpoint (`ragops endpoint`, one
// per namespace holding Indexes whose Corpus has spec.access) and the NetworkPolicy that lets
// only the operator, its workers and the endpoints reach Weaviate (docs/security.md). The
// builders are pure: the Index controller applies what they return.
package specs

import (
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ragops/ragops/internal/workload"
	servingspecs "github.com/ragops/ragops/serving/specs"
)

// Name is the name of the endpoint's ServiceAccount, Deployment, Service, NetworkPolicy and
// RoleBinding in each namespace.
const Name = "ragops-endpoint"

// Port is the endpoint's HTTP port.
const Port = 8080

// Component is the app.kubernetes.io/component of the endpoint's objects and pods.
const Component = "access-endpoint"

// AuthDelegator is the built-in ClusterRole that allows TokenReview (and
// SubjectAccessReview) creation.
const AuthDelegator = "system:auth-delegator"

// WeaviatePorts are Weaviate's client ports: REST and gRPC.
var WeaviatePorts = []int32{8080, 50051}

// Endpoint is what one namespace's endpoint objects are built from.
type Endpoint struct {
	Namespace string
	// Image holds the ragops binary.
	Image string
	// Owners are the owner references of every namespaced object.
	Owners []metav1.OwnerReference
	// ConfigMap, when set, holds config.json (endpoint.Config: OIDC issuers, group mapping),
	// mounted read-only; empty serves ServiceAccount tokens only.
	ConfigMap string
	// WeaviateNamespaces are the namespaces of the Weaviates the endpoint may reach.
	WeaviateNamespaces []string
	// Replicas of the Deployment (at least 1).
	Replicas int32
}

// Labels are the labels of every endpoint object and pod. They do not include
// app.kubernetes.io/managed-by: ragops, which selects the workers (no ingress; egress to
// DNS and Weaviate only, config/network-policy/workers): the endpoint takes requests and
// calls the API server and OIDC issuers.
func Labels() map[string]string {
	return map[string]string{workload.LabelComponent: Component, "app.kubernetes.io/name": "ragops", "app.kubernetes.io/part-of": "ragops"}
}

func (e *Endpoint) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: Name, Namespace: e.Namespace, Labels: Labels(), OwnerReferences: slices.Clone(e.Owners)}
}

// ServiceAccount is the identity the endpoint calls the API server with.
func (e *Endpoint) ServiceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: e.meta()}
}

// Role lets the endpoint read, in its namespace, the Indexes and Corpora it serves and the
// Secrets and ConfigMaps an Index names (Weaviate API key, CA bundle): get only. The manager
// holds these permissions itself, so it may grant them without the bind verb.
func (e *Endpoint) Role() *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: e.meta(), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"ragops.dev"}, Resources: []string{"indexes", "corpora"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: []string{"get"}},
	}}
}

// RoleBinding grants Role to the endpoint's ServiceAccount.
func (e *Endpoint) RoleBinding() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: e.meta(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: e.Namespace}}}
}

// ClusterRoleBinding grants AuthDelegator (TokenReview) to the endpoint's ServiceAccount;
// cluster-scoped, named after the namespace, without owners (a namespaced owner cannot own it).
func (e *Endpoint) ClusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: Name + ":" + e.Namespace, Labels: Labels()},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AuthDelegator},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: e.Namespace}}}
}

// Deployment runs `ragops endpoint` for the namespace under the restricted Pod Security
// profile (with its ServiceAccount token: it calls TokenReview), probed on /healthz. It
// listens on its pod's address only ($(POD_IP):Port, as the model servers do,
// servingspecs.PodIPEnv), so on the local cluster's process node, where pods share the host's
// network, it and a model server can both hold Port.
func (e *Endpoint) Deployment() *appsv1.Deployment {
	args := []string{"endpoint", "--namespace", e.Namespace, "--listen", "$(" + servingspecs.PodIPEnv + "):" + strconv.Itoa(Port)}
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	if e.ConfigMap != "" {
		args = append(args, "--config", "/etc/ragops/endpoint/config.json")
		mounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/ragops/endpoint", ReadOnly: true}}
		volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: e.ConfigMap}}}}}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
		PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 2}
	spec := corev1.PodSpec{
		ServiceAccountName: Name,
		Containers: []corev1.Container{{
			Name: "endpoint", Image: e.Image, Command: []string{"ragops"}, Args: args,
			Env: []corev1.EnvVar{{Name: servingspecs.PodIPEnv, ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
			Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: Port, Protocol: corev1.ProtocolTCP}},
			VolumeMounts:   mounts,
			ReadinessProbe: probe, LivenessProbe: probe,
		}},
		Volumes: volumes,
	}
	workload.RestrictPod(&spec)
	spec.AutomountServiceAccountToken = ptr.To(true)
	return &appsv1.Deployment{
		ObjectMeta: e.meta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(max(e.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: Labels()},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: Labels()}, Spec: spec},
		},
	}
}

// Service is the ClusterIP Service of the endpoint, port Port named http.
func (e *Endpoint) Service() *corev1.Service {
	return &corev1.Service{ObjectMeta: e.meta(), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: Labels(),
		Ports: []corev1.ServicePort{{Name: "http", Port: Port, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}}}
}

// NetworkPolicy of the endpoint pods: requests on Port from anywhere (every request is
// authenticated); connections to DNS, ports 443 and 6443 (the API server, OIDC issuers) and
// Weaviate's client ports in WeaviateNamespaces only.
func (e *Endpoint) NetworkPolicy() *networkingv1.NetworkPolicy {
	tcp := func(p int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))}
	}
	var weaviate []networkingv1.NetworkPolicyPeer
	for _, ns := range e.WeaviateNamespaces {
		weaviate = append(weaviate, networkingv1.NetworkPolicyPeer{NamespaceSelector: nsSelector(ns)})
	}
	var wp []networkingv1.NetworkPolicyPort
	for _, p := range WeaviatePorts {
		wp = append(wp, tcp(p))
	}
	egress := []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSelector("kube-system"),
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}, tcp(53)}},
		{Ports: []networkingv1.NetworkPolicyPort{tcp(443), tcp(6443)}},
	}
	if len(weaviate) > 0 {
		egress = append(egress, networkingv1.NetworkPolicyEgressRule{To: weaviate, Ports: wp})
	}
	return &networkingv1.NetworkPolicy{ObjectMeta: e.meta(), Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: Labels()},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{tcp(Port)}}},
		Egress:      egress,
	}}
}

func nsSelector(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}

// ReaderSecretKey is the key of ReaderSecret's Weaviate API key.
const ReaderSecretKey = "apiKey"

// ReaderSecret names the Secret, in the Index's namespace and owned by it, that holds the
// Weaviate API key of the read-only database user the operator provisions for Index index
// (vectorstore/authz): the endpoint searches that Index with it.
func ReaderSecret(index string) string {
	const suffix = "-weaviate-reader"
	return index[:min(len(index), 253-len(suffix))] + suffix
}

// WeaviatePolicyName is the name of the NetworkPolicy WeaviatePolicy builds.
const WeaviatePolicyName = "ragops-weaviate-access"

// Weaviate is what the NetworkPolicy in front of a Weaviate is built from.
type Weaviate struct {
	// Namespace is Weaviate's.
	Namespace string
	// Pods select Weaviate's pods (the Weaviate Helm chart labels them app: weaviate).
	Pods map[string]string
	// ManagerNamespace is the operator's namespace (its manager pods are admitted).
	ManagerNamespace string
	// ClientNamespaces hold Indexes on this Weaviate: their workers and endpoint are admitted.
	ClientNamespaces []string
}

// DefaultWeaviatePods select the pods of the Weaviate Helm chart.
var DefaultWeaviatePods = map[string]string{"app": "weaviate"}

// Policy returns the NetworkPolicy that lets only the operator's manager pods, the worker pods
// (app.kubernetes.io/managed-by: ragops) and the endpoint pods of ClientNamespaces reach
// Weaviate's client ports, and Weaviate's own pods reach each other on any port (cluster
// gossip, Raft, replication). Any other pod's connection to Weaviate is dropped by a CNI
// that enforces NetworkPolicy: a direct read that would bypass the endpoint's filter.
func (w *Weaviate) Policy() *networkingv1.NetworkPolicy {
	pods := w.Pods
	if len(pods) == 0 {
		pods = DefaultWeaviatePods
	}
	var clients []networkingv1.NetworkPolicyPeer
	if w.ManagerNamespace != "" {
		clients = append(clients, networkingv1.NetworkPolicyPeer{NamespaceSelector: nsSelector(w.ManagerNamespace),
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"control-plane": "controller-manager"}}})
	}
	nss := slices.Clone(w.ClientNamespaces)
	slices.Sort(nss)
	for _, ns := range slices.Compact(nss) {
		clients = append(clients,
			networkingv1.NetworkPolicyPeer{NamespaceSelector: nsSelector(ns),
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{workload.LabelManagedBy: workload.ManagedBy}}},
			networkingv1.NetworkPolicyPeer{NamespaceSelector: nsSelector(ns),
				PodSelector: &metav1.LabelSelector{MatchLabels: Labels()}})
	}
	var ports []networkingv1.NetworkPolicyPort
	for _, p := range WeaviatePorts {
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: WeaviatePolicyName, Namespace: w.Namespace, Labels: Labels()},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: maps.Clone(pods)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: clients, Ports: ports},
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(pods)}}}},
			},
		},
	}
}
