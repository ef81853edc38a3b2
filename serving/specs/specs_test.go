package specs

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func server() Server {
	return Server{Name: "ragops-serve-abc", Namespace: "docs", Labels: map[string]string{"app.kubernetes.io/managed-by": "ragops"},
		Owners: []metav1.OwnerReference{{APIVersion: "ragops.dev/v1alpha1", Kind: "Index", Name: "a", UID: "u1"}},
		Image:  "ragops:dev", ModelDir: "/model/minilm", Device: "cpu", Precision: "fp32", Replicas: 1}
}

func TestDeployment(t *testing.T) {
	for _, tc := range []struct {
		name        string
		edit        func(*Server)
		cpu, memory string
		threads     string
		gpu         bool
	}{
		{name: "defaults", edit: func(*Server) {}, cpu: "500m", memory: "512Mi", threads: "1"},
		{name: "requests kept", edit: func(s *Server) {
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("2Gi")}
		}, cpu: "3", memory: "2Gi", threads: "3"},
		{name: "limit below default caps the request", edit: func(s *Server) {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
		}, cpu: "250m", memory: "512Mi", threads: "1"},
		{name: "cpu limit sets threads", edit: func(s *Server) {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m")}
		}, cpu: "500m", memory: "512Mi", threads: "3"},
		{name: "cuda", edit: func(s *Server) { s.Device = "cuda"; s.Precision = "fp16" }, cpu: "500m", memory: "512Mi", threads: "1", gpu: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := server()
			tc.edit(&s)
			d := s.Deployment()
			if d.Name != s.Name || d.Namespace != "docs" || len(d.OwnerReferences) != 1 || d.Labels[LabelServer] != s.Name || d.Labels["app.kubernetes.io/managed-by"] != "ragops" {
				t.Fatalf("meta %+v", d.ObjectMeta)
			}
			if d.Spec.Selector.MatchLabels[LabelServer] != s.Name || d.Spec.Template.Labels[LabelServer] != s.Name {
				t.Errorf("selector %v, pod labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
			}
			c := d.Spec.Template.Spec.Containers[0]
			req := c.Resources.Requests
			if got := req[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.cpu)) != 0 {
				t.Errorf("cpu request %s, want %s", got.String(), tc.cpu)
			}
			if got := req[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tc.memory)) != 0 {
				t.Errorf("memory request %s, want %s", got.String(), tc.memory)
			}
			_, gpu := c.Resources.Limits[GPUResource]
			if gpu != tc.gpu {
				t.Errorf("gpu limit %v, want %v", gpu, tc.gpu)
			}
			i := slices.Index(c.Args, "--threads")
			if i < 0 || c.Args[i+1] != tc.threads {
				t.Errorf("args %v: want --threads %s", c.Args, tc.threads)
			}
			for flag, want := range map[string]string{"--model-dir": "/model/minilm", "--device": s.Device, "--precision": s.Precision, "--listen": "$(POD_IP):8080"} {
				if i := slices.Index(c.Args, flag); i < 0 || c.Args[i+1] != want {
					t.Errorf("args %v: want %s %s", c.Args, flag, want)
				}
			}
			// $(POD_IP) expands only from a variable defined in the container's env.
			if e := c.Env[0]; e.Name != "POD_IP" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
				t.Errorf("env %+v: want POD_IP from status.podIP first", c.Env)
			}
			if c.ReadinessProbe.HTTPGet.Path != "/.well-known/ready" || c.LivenessProbe.HTTPGet.Path != "/.well-known/live" {
				t.Errorf("probes %+v %+v", c.ReadinessProbe, c.LivenessProbe)
			}
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
				t.Errorf("no writable /tmp: %+v", c.VolumeMounts)
			}
			if tc.name != "requests kept" && s.Resources.Requests != nil {
				t.Errorf("the caller's resources were changed: %+v", s.Resources)
			}
		})
	}
}

func TestServiceAndEndpoint(t *testing.T) {
	s := server()
	svc := s.Service()
	if svc.Spec.Selector[LabelServer] != s.Name || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != Port || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Fatalf("service %+v", svc.Spec)
	}
	if got, want := s.Endpoint(), "http://ragops-serve-abc.docs.svc:8080"; got != want {
		t.Errorf("endpoint %s, want %s", got, want)
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	for _, tc := range []struct {
		replicas int32
		want     bool
	}{{0, false}, {1, false}, {2, true}, {5, true}} {
		s := server()
		s.Replicas = tc.replicas
		pdb := s.PodDisruptionBudget()
		if (pdb != nil) != tc.want {
			t.Errorf("replicas %d: PDB %v, want %v", tc.replicas, pdb != nil, tc.want)
			continue
		}
		if pdb != nil && (pdb.Spec.MaxUnavailable.IntVal != 1 || pdb.Spec.Selector.MatchLabels[LabelServer] != s.Name) {
			t.Errorf("replicas %d: PDB %+v", tc.replicas, pdb.Spec)
		}
		if got := *s.Deployment().Spec.Replicas; got != max(tc.replicas, 1) {
			t.Errorf("replicas %d: Deployment replicas %d", tc.replicas, got)
		}
	}
}

func TestNetworkPolicy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		weaviate   []string
		namespaces []string // admitted besides the own namespace's pods
	}{
		{name: "same namespace", weaviate: []string{"docs"}},
		{name: "none known"},
		{name: "other namespace", weaviate: []string{"weaviate"}, namespaces: []string{"weaviate"}},
		{name: "duplicates", weaviate: []string{"weaviate", "weaviate", "docs", "w2"}, namespaces: []string{"weaviate", "w2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := server()
			s.WeaviateNamespaces = tc.weaviate
			np := s.NetworkPolicy()
			if np.Spec.PodSelector.MatchLabels[LabelServer] != s.Name || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != "Ingress" {
				t.Fatalf("spec %+v", np.Spec)
			}
			if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != Port {
				t.Fatalf("ingress %+v", np.Spec.Ingress)
			}
			from := np.Spec.Ingress[0].From
			if from[0].PodSelector == nil || len(from[0].PodSelector.MatchLabels) != 0 || from[0].NamespaceSelector != nil {
				t.Errorf("first peer %+v: want the namespace's pods", from[0])
			}
			var got []string
			for _, p := range from[1:] {
				got = append(got, p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
			}
			if !slices.Equal(got, tc.namespaces) {
				t.Errorf("admitted namespaces %v, want %v", got, tc.namespaces)
			}
		})
	}
}

// The manager reads /meta from its own namespace: its pods there (and no other pod of that
// namespace) are admitted; a manager in the server's namespace needs no peer of its own.
func TestNetworkPolicyAdmitsTheManager(t *testing.T) {
	s := server()
	s.WeaviateNamespaces, s.ManagerNamespace = []string{"weaviate"}, "ragops-system"
	from := s.NetworkPolicy().Spec.Ingress[0].From
	if len(from) != 3 {
		t.Fatalf("peers %+v, want the namespace's pods, Weaviate's namespace and the manager", from)
	}
	m := from[2]
	if m.NamespaceSelector == nil || m.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "ragops-system" ||
		m.PodSelector == nil || m.PodSelector.MatchLabels["control-plane"] != "controller-manager" || len(m.PodSelector.MatchLabels) != 1 {
		t.Errorf("manager peer %+v: want the controller-manager pods of ragops-system", m)
	}
	s.ManagerNamespace = s.Namespace
	if n := len(s.NetworkPolicy().Spec.Ingress[0].From); n != 2 {
		t.Errorf("%d peers with the manager in the server's namespace, want 2", n)
	}
}

func TestWeaviateNamespace(t *testing.T) {
	for _, tc := range []struct {
		url, want string
		ok        bool
	}{
		{"http://weaviate:8080", "docs", true},
		{"http://weaviate.vec:8080", "vec", true},
		{"http://weaviate.vec.svc:8080", "vec", true},
		{"https://weaviate.vec.svc.cluster.local", "vec", true},
		{"http://10.0.0.4:8080", "", false},
		{"http://localhost:8080", "", false},
		{"https://abc.weaviate.network", "", false},
		{"::bad", "", false},
	} {
		got, ok := WeaviateNamespace(tc.url, "docs")
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.url, got, ok, tc.want, tc.ok)
		}
	}
}
