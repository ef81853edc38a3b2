// Command localnode is a Kubernetes node for the local cluster (hack/localcluster) that runs each
// container as a local process instead of in a container runtime. It is built on
// github.com/virtual-kubelet/virtual-kubelet v1.14.1 (node/nodeutil) with the provider in
// internal/provider. It exists for tests and the demo; production clusters use real kubelets.
//
// It must run as root: each container gets its own mount namespace with an overlay of the host
// root (writes outside volumes vanish with the container), the image's folder merged in, its
// volumes bound at their mount paths, a private /dev, and a chroot (internal/sandbox).
//
//	localnode --kubeconfig FILE [--node-name localnode] [--state-dir DIR] [--listen 127.0.0.1:10250]
//	          [--image-map REF=DIR]... [--image-entrypoint REF=CMD]...
//	          [--cpu N] [--memory QTY] [--pods N] [--advertise-gpus N] [--service-account-dir DIR]
//	          [--pod-cidr 127.1.0.0/16] [--pod-ip-lease-dir /run/localnode/pod-ips] [--service-proxy=true]
//	localnode stop-pods --state-dir DIR   # kill every container the node started (hack/localcluster/down.sh)
//
// Images: --image-map ragops:latest=/path/to/rootfs makes containers with image ragops:latest
// (also written docker.io/library/ragops or with no tag, which means :latest) see the rootfs
// folder's files over the host root; --image-map busybox=/ runs busybox-image containers on the
// host root itself. --image-entrypoint ragops:latest=/usr/local/bin/ragops is the image's
// ENTRYPOINT for containers that give only args.
//
// --advertise-gpus N is a demo-only switch: the node advertises N nvidia.com/gpu so pods that
// request GPUs schedule; it does not create GPUs (the host's /dev/nvidia* are bound into such
// containers when they exist, nothing more).
//
// Networking: every pod gets its own loopback address from --pod-cidr (status.podIP, the
// downward API's status.podIP; kept in the pod's state across node restarts, freed when the pod
// goes; a host-wide lease folder keeps two nodes on one host apart). Pods still share the host's
// network: a process that listens on 0.0.0.0 takes the port on every pod's address, one that
// listens on $(POD_IP):PORT only on its own. The node is also the cluster's kube-proxy
// (internal/svcproxy, off with --service-proxy=false): with kube-apiserver's
// --service-cluster-ip-range in 127.0.0.0/8 it listens on each Service's ClusterIP:port and
// forwards to the ready pods' podIP:targetPort, and it writes each pod's /etc/hosts with the
// Services' names (NAME.NAMESPACE.svc[.cluster.local], NAME in the pod's namespace): there is no
// cluster DNS.
//
// The node publishes InternalIP 127.0.0.1 and its kubelet port, and serves the kubelet API
// (logs, exec) over TLS with a self-signed certificate; kube-apiserver must run with
// --kubelet-preferred-address-types=InternalIP. virtual-kubelet's logs go to stderr
// (--log-level debug|info|warn|error).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ragops/ragops/hack/localnode/internal/podip"
	"github.com/ragops/ragops/hack/localnode/internal/provider"
	"github.com/ragops/ragops/hack/localnode/internal/sandbox"
	"github.com/ragops/ragops/hack/localnode/internal/servingcert"
	"github.com/ragops/ragops/hack/localnode/internal/svcproxy"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == sandbox.ShimArg {
		os.Exit(sandbox.RunShim(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == "stop-pods" {
		if err := stopPods(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "localnode stop-pods:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localnode:", err)
		os.Exit(1)
	}
}

// pairs is a repeatable KEY=VALUE flag.
type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	p[k] = v
	return nil
}

type options struct {
	kubeconfig, nodeName, stateDir, listen, saDir, logLevel string
	apiHost, apiPort                                        string
	podCIDR, leaseDir                                       string
	cpu, memory, pods, storage                              string
	gpus                                                    int
	proxy                                                   bool
	images, entrypoints, labels                             pairs
}

func parseFlags(args []string) (*options, error) {
	o := &options{images: pairs{}, entrypoints: pairs{}, labels: pairs{}}
	fs := flag.NewFlagSet("localnode", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to join (required)")
	fs.StringVar(&o.nodeName, "node-name", "localnode", "name of the Node object")
	fs.StringVar(&o.stateDir, "state-dir", ".cache/localcluster/node", "folder for pod state, volumes and logs (kept across restarts)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:10250", "address of the kubelet API (TLS); its port is published in the Node status")
	fs.StringVar(&o.saDir, "service-account-dir", "", "folder with token and ca.crt mounted at /var/run/secrets/kubernetes.io/serviceaccount in pods (empty: none)")
	fs.StringVar(&o.apiHost, "apiserver-host", "", "KUBERNETES_SERVICE_HOST in pods (default: the kubeconfig's server host)")
	fs.StringVar(&o.apiPort, "apiserver-port", "", "KUBERNETES_SERVICE_PORT in pods (default: the kubeconfig's server port)")
	fs.StringVar(&o.podCIDR, "pod-cidr", podip.DefaultPrefix, "loopback prefix the pods' own addresses come from")
	fs.StringVar(&o.leaseDir, "pod-ip-lease-dir", podip.DefaultLeaseDir, "host-wide folder of pod address leases, shared by the local nodes of one host")
	fs.BoolVar(&o.proxy, "service-proxy", true, "forward Service ClusterIP:port to ready pods (needs a loopback --service-cluster-ip-range) and write the pods' hosts files")
	fs.StringVar(&o.cpu, "cpu", strconv.Itoa(runtime.NumCPU()), "CPU capacity advertised")
	fs.StringVar(&o.memory, "memory", "", "memory capacity advertised (default: the host's MemTotal)")
	fs.StringVar(&o.pods, "pods", "110", "pod capacity advertised")
	fs.StringVar(&o.storage, "ephemeral-storage", "100Gi", "ephemeral-storage capacity advertised")
	fs.IntVar(&o.gpus, "advertise-gpus", 0, "DEMO ONLY: advertise this many nvidia.com/gpu so GPU-requesting pods schedule; no GPU is created")
	fs.Var(o.images, "image-map", "REF=DIR: run containers of image REF on folder DIR merged over the host root (DIR=/ for the host root); repeatable")
	fs.Var(o.entrypoints, "image-entrypoint", "REF=CMD: the image's entrypoint (split at spaces) for containers without command; repeatable")
	fs.Var(o.labels, "node-label", "KEY=VALUE label of the Node; repeatable")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	if o.gpus < 0 {
		return nil, fmt.Errorf("--advertise-gpus %d: must be >= 0", o.gpus)
	}
	return o, nil
}

func run() error {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: %w", o.logLevel, err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	vklog.L = vkslog.FromSlog(logger)
	if os.Geteuid() != 0 {
		return errors.New("must run as root: containers get their own mount namespaces (unshare is refused otherwise)")
	}

	restCfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	// nodeutil.NewNode builds a default client from $KUBECONFIG before options apply (and warns
	// when it cannot); point it at the same file.
	os.Setenv("KUBECONFIG", o.kubeconfig)
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	if o.apiHost == "" || o.apiPort == "" {
		u, err := url.Parse(restCfg.Host)
		if err != nil {
			return fmt.Errorf("kubeconfig server %q: %w", restCfg.Host, err)
		}
		if o.apiHost == "" {
			o.apiHost = u.Hostname()
		}
		if o.apiPort == "" {
			o.apiPort = u.Port()
			if o.apiPort == "" {
				o.apiPort = "443"
			}
		}
	}
	images := map[string]provider.Image{}
	for ref, dir := range o.images {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return fmt.Errorf("--image-map %s=%s: not an existing folder", ref, dir)
		}
		images[provider.NormalizeImage(ref)] = provider.Image{Root: abs}
	}
	for ref, cmd := range o.entrypoints {
		img, ok := images[provider.NormalizeImage(ref)]
		if !ok {
			return fmt.Errorf("--image-entrypoint %s: the image has no --image-map", ref)
		}
		img.Entrypoint = strings.Fields(cmd)
		images[provider.NormalizeImage(ref)] = img
	}
	capacity, err := capacity(o)
	if err != nil {
		return err
	}
	host, portStr, err := net.SplitHostPort(o.listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("--listen %q: bad port", o.listen)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	stateDir, err := filepath.Abs(o.stateDir)
	if err != nil {
		return err
	}
	saDir := o.saDir
	if saDir != "" {
		if saDir, err = filepath.Abs(saDir); err != nil {
			return err
		}
	}
	ips, err := podip.New(o.podCIDR, o.leaseDir)
	if err != nil {
		return fmt.Errorf("--pod-cidr %s: %w", o.podCIDR, err)
	}
	cert, err := servingcert.Generate([]string{"127.0.0.1", host, "localhost", o.nodeName}, 365*24*time.Hour)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = vklog.WithLogger(ctx, vklog.L)

	var prov *provider.Provider
	newProvider := func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		describeNode(pc.Node, o, capacity, port)
		p, err := provider.New(ctx, provider.Config{
			NodeName: o.nodeName, StateDir: stateDir, Self: self, Images: images, Client: client,
			APIServerHost: o.apiHost, APIServerPort: o.apiPort, ServiceAccountDir: saDir, Allocatable: capacity,
			PodIPs: ips,
		})
		prov = p
		return p, nil, err
	}
	mux := http.NewServeMux()
	n, err := nodeutil.NewNode(o.nodeName, newProvider,
		nodeutil.WithClient(client),
		func(c *nodeutil.NodeConfig) error {
			c.Handler = mux
			c.HTTPListenAddr = o.listen
			c.NumWorkers = 4
			c.SkipDownwardAPIResolution = true // internal/podenv resolves env (status.podIP, resourceFieldRef included)
			return nil
		},
		nodeutil.AttachProviderRoutes(mux),
		nodeutil.WithTLSConfig(func(c *tls.Config) error {
			c.Certificates = []tls.Certificate{cert}
			return nil
		}),
	)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- n.Run(ctx) }()
	if o.proxy && prov != nil {
		px := svcproxy.New(svcproxy.Config{Client: client, APIServer: net.JoinHostPort(o.apiHost, o.apiPort),
			OnServices: prov.SetServices, Logger: logger})
		go func() {
			if err := px.Run(ctx); err != nil {
				errc <- fmt.Errorf("service proxy: %w", err)
			}
		}()
	}
	if err := n.WaitReady(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("node did not become ready: %w", err)
	}
	logger.Info("node ready", "node", o.nodeName, "kubelet", o.listen, "images", len(images), "stateDir", stateDir)
	err = <-errc
	if ctx.Err() != nil {
		logger.Info("node stopped; its containers keep running (localnode stop-pods ends them)")
		return nil
	}
	return err
}

// capacity builds the node's capacity from the flags.
func capacity(o *options) (corev1.ResourceList, error) {
	mem := o.memory
	if mem == "" {
		m, err := memTotal()
		if err != nil {
			return nil, fmt.Errorf("--memory not given and %w", err)
		}
		mem = m
	}
	rl := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: o.cpu, corev1.ResourceMemory: mem, corev1.ResourcePods: o.pods,
		corev1.ResourceEphemeralStorage: o.storage,
	} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("capacity %s %q: %w", name, v, err)
		}
		rl[name] = q
	}
	if o.gpus > 0 {
		rl[provider.GPUResource] = *resource.NewQuantity(int64(o.gpus), resource.DecimalSI)
	}
	return rl, nil
}

// memTotal reads MemTotal from /proc/meminfo as a quantity.
func memTotal() (string, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "", fmt.Errorf("cannot read /proc/meminfo: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				return f[0] + "Ki", nil
			}
		}
	}
	return "", errors.New("/proc/meminfo has no MemTotal")
}

// describeNode fills in the Node object virtual-kubelet registers.
func describeNode(n *corev1.Node, o *options, capacity corev1.ResourceList, port int) {
	for k, v := range o.labels {
		n.Labels[k] = v
	}
	n.Labels[corev1.LabelOSStable] = runtime.GOOS
	n.Labels[corev1.LabelArchStable] = runtime.GOARCH
	n.Status.Capacity = capacity
	n.Status.Allocatable = capacity.DeepCopy()
	// Only InternalIP: a published Hostname breaks `kubectl logs` unless kube-apiserver prefers
	// InternalIP.
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
		KubeletVersion: "v1.37.2-localnode", ContainerRuntimeVersion: "localnode://processes",
	}
}

// stopPods kills every container the node started (the node itself should be stopped first).
func stopPods(args []string) error {
	fs := flag.NewFlagSet("stop-pods", flag.ContinueOnError)
	stateDir := fs.String("state-dir", ".cache/localcluster/node", "the node's --state-dir")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n, err := provider.KillAll(*stateDir)
	fmt.Printf("localnode stop-pods: killed %d container(s)\n", n)
	return err
}
