// Package svcproxy is the local node's kube-proxy: a userspace proxy that makes Service
// ClusterIPs work for local processes. The local cluster's kube-apiserver hands out ClusterIPs
// from a loopback range (hack/localcluster/up.sh --service-cluster-ip-range), and every
// 127.0.0.0/8 address reaches the host's lo interface, so the proxy can listen on
// ClusterIP:port itself and forward each TCP connection to a ready endpoint,
// podIP:targetPort, in turn (round robin; an endpoint that refuses is skipped for the next).
//
// Endpoints come from the pods, not from EndpointSlices: the pods of the local node have
// loopback addresses (package podip) and kube-apiserver refuses loopback addresses in
// EndpointSlices and Endpoints (ValidateEndpointIP: "may not be in the loopback range"), so the
// endpointslice controller cannot publish them. The proxy selects, as that controller would, the
// pods of the Service's namespace that match its selector, are Running, not being deleted, have
// an address and are Ready (PodReady condition True); a named targetPort is looked up in the
// pod's container ports. Services without a selector use their EndpointSlices (ready endpoints).
// The `kubernetes` Service in `default` forwards to Config.APIServer when set.
//
// Listeners open when a Service (or a port) appears and close when it goes; connections already
// forwarded are left to finish. Only TCP is proxied. Config.OnServices hears the ClusterIP of
// every Service whenever that set changes (the node's per-pod hosts files).
package svcproxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Service is one Service's name and ClusterIP, as OnServices reports it.
type Service struct {
	Namespace, Name, ClusterIP string
}

// Config configures a Proxy.
type Config struct {
	// Client watches Services, Pods and EndpointSlices.
	Client kubernetes.Interface
	// APIServer, host:port, is where default/kubernetes forwards ("" leaves it without endpoints).
	APIServer string
	// OnServices, when set, is called (from one goroutine) with every Service that has a ClusterIP,
	// sorted by namespace and name, each time that set changes.
	OnServices func([]Service)
	// Logger logs listeners opened and closed and failures (default slog.Default()).
	Logger *slog.Logger
	// Resync is how often the proxy recomputes everything even without events, so a listener that
	// could not open (its address in use) is retried (default 5 s).
	Resync time.Duration
	// DialTimeout bounds each connection attempt to an endpoint (default 2 s).
	DialTimeout time.Duration
}

// Proxy forwards Service ClusterIP:port to ready endpoints. Create it with New, start it with Run.
type Proxy struct {
	cfg      Config
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	slices   discoverylisters.EndpointSliceLister
	factory  informers.SharedInformerFactory
	kick     chan struct{}

	mu        sync.Mutex
	listeners map[string]*listener // by ClusterIP:port
	known     []Service
}

// New builds a proxy; nothing runs before Run.
func New(cfg Config) *Proxy {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 5 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	f := informers.NewSharedInformerFactory(cfg.Client, 0)
	p := &Proxy{
		cfg:       cfg,
		services:  f.Core().V1().Services().Lister(),
		pods:      f.Core().V1().Pods().Lister(),
		slices:    f.Discovery().V1().EndpointSlices().Lister(),
		factory:   f,
		kick:      make(chan struct{}, 1),
		listeners: map[string]*listener{},
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		f.Core().V1().Services().Informer(), f.Core().V1().Pods().Informer(), f.Discovery().V1().EndpointSlices().Informer(),
	} {
		_, _ = inf.AddEventHandler(h)
	}
	return p
}

func (p *Proxy) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run watches the API and keeps the listeners in step until ctx ends, then closes them all.
func (p *Proxy) Run(ctx context.Context) error {
	p.factory.Start(ctx.Done())
	for typ, ok := range p.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return errors.New("svcproxy: cache of " + typ.String() + " did not sync")
		}
	}
	t := time.NewTicker(p.cfg.Resync)
	defer t.Stop()
	defer p.closeAll()
	for {
		p.sync()
		select {
		case <-ctx.Done():
			p.factory.Shutdown()
			return nil
		case <-p.kick:
			// Let a burst of events (a Deployment's pods) settle into one pass.
			time.Sleep(20 * time.Millisecond)
		case <-t.C:
		}
	}
}

// Endpoints returns the endpoints (host:port) ClusterIP:port forwards to now (for tests and
// debugging); nil when there is no such listener.
func (p *Proxy) Endpoints(addr string) []string {
	p.mu.Lock()
	l := p.listeners[addr]
	p.mu.Unlock()
	if l == nil {
		return nil
	}
	return slices.Clone(*l.eps.Load())
}

// Listening returns the ClusterIP:port addresses with an open listener, sorted.
func (p *Proxy) Listening() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.listeners))
	for a := range p.listeners {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, l := range p.listeners {
		l.close()
		delete(p.listeners, a)
	}
}

// sync recomputes the wanted listeners and their endpoints and applies them.
func (p *Proxy) sync() {
	svcs, err := p.services.List(labels.Everything())
	if err != nil {
		p.cfg.Logger.Warn("svcproxy: list services", "err", err)
		return
	}
	want := map[string][]string{} // ClusterIP:port -> endpoints
	names := map[string]string{}  // ClusterIP:port -> ns/name:port for logs
	var known []Service
	for _, s := range svcs {
		for _, ip := range clusterIPs(s) {
			if ip.Is4() {
				known = append(known, Service{Namespace: s.Namespace, Name: s.Name, ClusterIP: ip.String()})
				break
			}
		}
		for _, ip := range clusterIPs(s) {
			for _, sp := range s.Spec.Ports {
				if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
					continue
				}
				addr := net.JoinHostPort(ip.String(), strconv.Itoa(int(sp.Port)))
				want[addr] = p.endpoints(s, sp)
				names[addr] = s.Namespace + "/" + s.Name + ":" + portName(sp)
			}
		}
	}
	sort.Slice(known, func(i, j int) bool {
		if known[i].Namespace != known[j].Namespace {
			return known[i].Namespace < known[j].Namespace
		}
		return known[i].Name < known[j].Name
	})

	p.mu.Lock()
	for addr, l := range p.listeners {
		if _, ok := want[addr]; !ok {
			l.close()
			delete(p.listeners, addr)
			p.cfg.Logger.Info("svcproxy: listener closed", "addr", addr, "service", l.name)
		}
	}
	for addr, eps := range want {
		l := p.listeners[addr]
		if l == nil {
			nl, err := p.listen(addr, names[addr])
			if err != nil {
				p.cfg.Logger.Warn("svcproxy: cannot listen (retried)", "addr", addr, "service", names[addr], "err", err)
				continue
			}
			l = nl
			p.listeners[addr] = l
			p.cfg.Logger.Info("svcproxy: listening", "addr", addr, "service", l.name, "endpoints", eps)
		}
		if old := *l.eps.Load(); !slices.Equal(old, eps) {
			l.eps.Store(&eps)
			p.cfg.Logger.Debug("svcproxy: endpoints", "addr", addr, "service", l.name, "endpoints", eps)
		}
	}
	changed := !slices.Equal(known, p.known)
	p.known = known
	p.mu.Unlock()
	if changed && p.cfg.OnServices != nil {
		p.cfg.OnServices(known)
	}
}

func portName(sp corev1.ServicePort) string {
	if sp.Name != "" {
		return sp.Name
	}
	return strconv.Itoa(int(sp.Port))
}

// clusterIPs returns the Service's loopback ClusterIPs (none for headless and ExternalName
// Services; a ClusterIP outside 127.0.0.0/8, from a cluster whose service range is not a
// loopback one, cannot be listened on and is left out).
func clusterIPs(s *corev1.Service) []netip.Addr {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil && a.IsLoopback() {
			out = append(out, a)
		}
	}
	return out
}

// endpoints returns the ready endpoints of service port sp, sorted.
func (p *Proxy) endpoints(s *corev1.Service, sp corev1.ServicePort) []string {
	eps := []string{}
	if s.Namespace == "default" && s.Name == "kubernetes" && p.cfg.APIServer != "" {
		return []string{p.cfg.APIServer}
	}
	if s.Spec.Selector == nil {
		return p.sliceEndpoints(s, sp)
	}
	pods, err := p.pods.Pods(s.Namespace).List(labels.SelectorFromSet(s.Spec.Selector))
	if err != nil {
		return eps
	}
	for _, pod := range pods {
		if !ready(pod) {
			continue
		}
		port, ok := targetPort(pod, sp)
		if !ok {
			continue
		}
		eps = append(eps, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)))
	}
	sort.Strings(eps)
	return eps
}

// sliceEndpoints reads the ready endpoints of a Service without selector from its EndpointSlices.
func (p *Proxy) sliceEndpoints(s *corev1.Service, sp corev1.ServicePort) []string {
	eps := []string{}
	sl, err := p.slices.EndpointSlices(s.Namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: s.Name}))
	if err != nil {
		return eps
	}
	for _, es := range sl {
		if es.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		port := 0
		for _, ep := range es.Ports {
			if ep.Port != nil && (ep.Name == nil && sp.Name == "" || ep.Name != nil && *ep.Name == sp.Name) {
				port = int(*ep.Port)
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range es.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				eps = append(eps, net.JoinHostPort(a, strconv.Itoa(port)))
			}
		}
	}
	sort.Strings(eps)
	return slices.Compact(eps)
}

// ready is the endpointslice controller's test: Running, not deleting, an address, PodReady.
func ready(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves sp's targetPort for pod (a number, or a container port's name).
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (int, bool) {
	tp := sp.TargetPort
	if tp.StrVal == "" && tp.IntVal == 0 && tp.Type == 0 {
		return int(sp.Port), true
	}
	if tp.Type == 0 {
		return int(tp.IntVal), true
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal && (cp.Protocol == "" || cp.Protocol == sp.Protocol || sp.Protocol == "") {
				return int(cp.ContainerPort), true
			}
		}
	}
	if n, err := strconv.Atoi(tp.StrVal); err == nil {
		return n, true
	}
	return 0, false
}

// listener is one ClusterIP:port.
type listener struct {
	name string
	ln   net.Listener
	eps  atomic.Pointer[[]string]
	next atomic.Uint64
	dial time.Duration
	log  *slog.Logger
}

func (p *Proxy) listen(addr, name string) (*listener, error) {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, err
	}
	l := &listener{name: name, ln: ln, dial: p.cfg.DialTimeout, log: p.cfg.Logger}
	l.eps.Store(&[]string{})
	go l.serve()
	return l, nil
}

func (l *listener) close() { l.ln.Close() }

func (l *listener) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go l.forward(c)
	}
}

// forward connects c to an endpoint, trying each once from the next in turn, and copies both ways.
func (l *listener) forward(c net.Conn) {
	eps := *l.eps.Load()
	if len(eps) == 0 {
		abort(c)
		return
	}
	start := int(l.next.Add(1)-1) % len(eps)
	var be net.Conn
	for i := range eps {
		ep := eps[(start+i)%len(eps)]
		var err error
		if be, err = net.DialTimeout("tcp", ep, l.dial); err == nil {
			break
		}
		l.log.Debug("svcproxy: endpoint refused", "service", l.name, "endpoint", ep, "err", err)
	}
	if be == nil {
		abort(c)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(be, c)
	go pipe(c, be)
	<-done
	<-done
	c.Close()
	be.Close()
}

// abort resets c (the client sees "connection reset", as with kube-proxy's reject rules it sees
// "connection refused": an error at once, not a hang).
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
