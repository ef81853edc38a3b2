// Package provider is the local node's virtual-kubelet provider (nodeutil.Provider and
// node.PodNotifier): it runs each container of a pod as a local process through package sandbox.
//
//   - Images map to local root folders (Config.Images); an unmapped image leaves the container
//     waiting with reason ErrImagePull.
//   - Volumes come from package volumes, env and command from package podenv; a configuration
//     problem (missing ConfigMap key, unbound claim) leaves the container waiting with reason
//     CreateContainerConfigError and is retried, as the kubelet does.
//   - Init containers run in order before the containers; restartPolicy (Always, OnFailure,
//     Never) decides restarts, with a doubling back-off (Config.RestartBackoff up to
//     Config.MaxRestartBackoff).
//   - Exit codes, reasons and termination messages (the file at terminationMessagePath, or the
//     log tail with FallbackToLogsOnError) land in the container statuses.
//   - Logs (with follow, tail, limitBytes and previous) and exec are served from the per-attempt
//     log files and the container's root.
//   - State lives on disk (Config.StateDir/pods/UID/state.json): a restarted node re-attaches to
//     the containers still running and does not run any pod twice.
//
// Each pod has its own loopback address (package podip) and a hosts file at /etc/hosts naming the
// cluster's Services (SetServices, fed by package svcproxy); pods still share the host's network.
//
// Readiness probes (httpGet, tcpSocket) decide containers' readiness (probe.go). Liveness and
// startup probes, lifecycle hooks, sidecar init containers (restartPolicy on an init container),
// resource limits enforcement, ports and service links are not implemented: resource requests
// are accepted and only used for scheduling.
package provider

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/ragops/ragops/hack/localnode/internal/podenv"
	"github.com/ragops/ragops/hack/localnode/internal/podip"
	"github.com/ragops/ragops/hack/localnode/internal/svcproxy"
	"github.com/ragops/ragops/hack/localnode/internal/volumes"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Image is a local root folder that stands for a container image.
type Image struct {
	// Root is the folder merged over the host's "/" ("/" for the host root alone).
	Root string
	// Entrypoint and Args are the image's ENTRYPOINT and CMD, used when the container gives no
	// command (args).
	Entrypoint []string
	Args       []string
}

// Config configures the provider.
type Config struct {
	// NodeName is the node's name.
	NodeName string
	// StateDir holds pod state, volumes and logs; it survives node restarts.
	StateDir string
	// Self is the node binary that acts as the container shim (normally /proc/self/exe resolved).
	Self string
	// Images maps image references (normalised by NormalizeImage) to local folders.
	Images map[string]Image
	// Client talks to the API server (claims, volumes, tokens, ConfigMaps, Secrets).
	Client kubernetes.Interface
	// APIServerHost and APIServerPort are what KUBERNETES_SERVICE_HOST and _PORT say in pods.
	APIServerHost, APIServerPort string
	// ServiceAccountDir, when set, holds `token` and `ca.crt` mounted read-only (with a
	// `namespace` file) at /var/run/secrets/kubernetes.io/serviceaccount in every container of a
	// pod that does not opt out with automountServiceAccountToken: false, so in-cluster clients
	// reach the local API server.
	ServiceAccountDir string
	// Allocatable is what resourceFieldRef limits fall back to.
	Allocatable corev1.ResourceList
	// PodIPs hands out each pod's own loopback address (nil: a podip allocator for
	// podip.DefaultPrefix with leases in podip.DefaultLeaseDir).
	PodIPs *podip.Allocator
	// RestartBackoff is the first restart delay (default 1 s), doubled per restart up to
	// MaxRestartBackoff (default 60 s).
	RestartBackoff, MaxRestartBackoff time.Duration
}

// Provider runs pods as local processes. Create it with New.
type Provider struct {
	cfg     Config
	ips     *podip.Allocator
	sources podenv.Sources
	vols    volumes.Builder

	mu       sync.Mutex
	pods     map[string]*podRun // by namespace/name
	notify   func(*corev1.Pod)
	services []svcproxy.Service // named in the pods' hosts files
}

// New creates the provider and loads the pods a previous run of the node left in
// cfg.StateDir, re-attaching to containers that still run. Errors: the state folder cannot be
// created or read.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = time.Second
	}
	if cfg.MaxRestartBackoff <= 0 {
		cfg.MaxRestartBackoff = time.Minute
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, "pods"), 0o755); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	if cfg.PodIPs == nil {
		a, err := podip.New(podip.DefaultPrefix, podip.DefaultLeaseDir)
		if err != nil {
			return nil, err
		}
		cfg.PodIPs = a
	}
	src := apiSources{client: cfg.Client}
	p := &Provider{
		cfg:     cfg,
		ips:     cfg.PodIPs,
		sources: src,
		vols:    volumes.Builder{Client: cfg.Client, Sources: src},
		pods:    map[string]*podRun{},
	}
	if err := p.load(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// NormalizeImage turns an image reference into the form Config.Images uses: docker.io/library/
// and docker.io/ prefixes dropped, ":latest" added when the reference has neither tag nor digest.
func NormalizeImage(ref string) string {
	ref = strings.TrimPrefix(ref, "docker.io/")
	ref = strings.TrimPrefix(ref, "library/")
	if strings.Contains(ref, "@") {
		return ref
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if !strings.Contains(last, ":") {
		ref += ":latest"
	}
	return ref
}

func key(ns, name string) string { return ns + "/" + name }

// NotifyPods implements node.PodNotifier: status changes are pushed to cb.
func (p *Provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = cb
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	// NotifyPods must not block, and cb blocks until virtual-kubelet's pod lister has synced.
	go func() {
		for _, r := range runs {
			p.publish(r)
		}
	}()
}

// CreatePod starts running pod; it returns at once (images, volumes and containers are set up in
// the background and reported through NotifyPods).
func (p *Provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	old := p.pods[k]
	p.mu.Unlock()
	if old != nil {
		if old.uid() == pod.UID {
			return nil
		}
		// A new pod with the name of an old one: the old one goes first.
		p.terminate(ctx, old, 0)
	}
	r, err := newPodRun(p, pod)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.pods[k] = r
	p.mu.Unlock()
	log.G(ctx).WithField("pod", k).Info("starting pod")
	r.start(context.WithoutCancel(ctx))
	return nil
}

// UpdatePod records the pod's new labels and annotations; running containers are not touched
// (image updates are not applied).
func (p *Provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	r := p.get(pod.Namespace, pod.Name)
	if r == nil || r.uid() != pod.UID {
		return errdefs.NotFoundf("pod %s/%s is not known to the local node", pod.Namespace, pod.Name)
	}
	r.mu.Lock()
	r.st.Pod.Labels = pod.Labels
	r.st.Pod.Annotations = pod.Annotations
	r.st.Pod.DeletionTimestamp = pod.DeletionTimestamp
	r.st.Pod.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
	r.mu.Unlock()
	r.save()
	return nil
}

// DeletePod stops the pod's containers (SIGTERM, SIGKILL after the grace period), reports them
// terminated, and removes the pod's local state (volumes other than hostPath and claims, logs).
func (p *Provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	r := p.get(pod.Namespace, pod.Name)
	if r == nil || r.uid() != pod.UID {
		return errdefs.NotFoundf("pod %s/%s is not known to the local node", pod.Namespace, pod.Name)
	}
	grace := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	}
	r.mu.Lock()
	r.st.Pod.DeletionTimestamp = pod.DeletionTimestamp
	r.st.Pod.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
	r.mu.Unlock()
	go p.terminate(context.WithoutCancel(ctx), r, time.Duration(grace)*time.Second)
	return nil
}

// terminate stops r, publishes its final status and forgets it.
func (p *Provider) terminate(ctx context.Context, r *podRun, grace time.Duration) {
	r.stop(grace)
	r.mu.Lock()
	st := &r.st.Pod.Status
	if st.Phase != corev1.PodSucceeded && st.Phase != corev1.PodFailed {
		st.Phase = corev1.PodFailed
		if st.Reason == "" {
			st.Reason = "Terminated"
			st.Message = "the pod was deleted"
		}
		allZero := len(r.st.Pod.Spec.Containers) > 0
		for _, c := range r.st.Containers {
			if !c.Init && (c.Last == nil || c.Last.ExitCode != 0) {
				allZero = false
			}
		}
		if allZero {
			st.Phase = corev1.PodSucceeded
		}
	}
	r.mu.Unlock()
	r.refreshStatus()
	p.publish(r)
	p.mu.Lock()
	if p.pods[r.key()] == r {
		delete(p.pods, r.key())
	}
	p.mu.Unlock()
	if err := os.RemoveAll(r.dir); err != nil {
		log.G(ctx).WithError(err).WithField("pod", r.key()).Warn("cannot remove pod state")
	}
	r.mu.Lock()
	ip := r.st.IP
	r.mu.Unlock()
	p.ips.Release(ip, r.dir)
	log.G(ctx).WithField("pod", r.key()).Info("pod removed")
}

func (p *Provider) get(ns, name string) *podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[key(ns, name)]
}

// GetPod returns the pod with its current status; errdefs.NotFound when unknown.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r := p.get(namespace, name)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not known to the local node", namespace, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the pod's current status; errdefs.NotFound when unknown.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod the node runs or keeps (terminal pods stay until deleted).
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i].Namespace, out[i].Name) < key(out[j].Namespace, out[j].Name) })
	return out, nil
}

// publish pushes r's status to the notifier.
func (p *Provider) publish(r *podRun) {
	p.mu.Lock()
	cb := p.notify
	p.mu.Unlock()
	if cb != nil {
		cb(r.snapshot())
	}
}

// AttachToContainer is not supported by the local node.
func (p *Provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("attach is not supported by the local node (use kubectl logs -f)")
}

// PortForward is not supported: pods listen on the host's network directly.
func (p *Provider) PortForward(ctx context.Context, ns, name string, _ int32, _ io.ReadWriteCloser) error {
	ip := "its status.podIP"
	if r := p.get(ns, name); r != nil {
		r.mu.Lock()
		ip = r.st.Pod.Status.PodIP
		r.mu.Unlock()
	}
	return errdefs.InvalidInput("port-forward is not supported by the local node: pods share the host's network, connect to the pod's address (" + ip + ") directly")
}

// GetStatsSummary returns a summary naming the node and its pods, without usage figures.
func (p *Provider) GetStatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	pods, _ := p.GetPods(ctx)
	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.cfg.NodeName, StartTime: metav1.Now()}}
	for _, pod := range pods {
		s.Pods = append(s.Pods, statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}})
	}
	return s, nil
}

// GetMetricsResource returns no metrics.
func (p *Provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}

// apiSources reads ConfigMaps and Secrets straight from the API server.
type apiSources struct{ client kubernetes.Interface }

func (s apiSources) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (s apiSources) Secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return s.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}
