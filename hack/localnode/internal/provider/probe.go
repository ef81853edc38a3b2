package provider

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/log"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Readiness probes, as the kubelet runs them: httpGet (2xx/3xx) and tcpSocket against the pod's
// own address (package podip) unless the probe names a host, every periodSeconds after
// initialDelaySeconds, with timeoutSeconds, successThreshold and failureThreshold. A container
// with a readiness probe is not Ready until the probe has passed; the pod's Ready condition (and
// so the node's Service proxy and a Deployment's rollout) follows. exec and grpc probes are not
// run: gRPC is checked as a TCP connect, exec counts as passing. Liveness and startup probes are
// not run.

// probeReadiness probes container c's readiness until ctx ends, recording the result in its state.
func (r *podRun) probeReadiness(ctx context.Context, c *corev1.Container) {
	pr := c.ReadinessProbe
	period := time.Duration(max(pr.PeriodSeconds, 0)) * time.Second
	if period == 0 {
		period = 10 * time.Second
	}
	timeout := time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second
	succeed, fail := max(pr.SuccessThreshold, 1), max(pr.FailureThreshold, 1)
	if pr.FailureThreshold == 0 {
		fail = 3
	}
	if !sleep(ctx, time.Duration(pr.InitialDelaySeconds)*time.Second) {
		return
	}
	var oks, bad int32
	for {
		err := r.check(ctx, c, pr, timeout)
		if ctx.Err() != nil {
			return
		}
		ready := r.containerReady(c.Name)
		if err == nil {
			oks, bad = oks+1, 0
			if !ready && oks >= succeed {
				r.setReady(c.Name, true)
			}
		} else {
			oks, bad = 0, bad+1
			log.G(ctx).WithField("pod", r.key()).WithField("container", c.Name).WithError(err).Debug("readiness probe failed")
			if ready && bad >= fail {
				r.setReady(c.Name, false)
			}
		}
		if !sleep(ctx, period) {
			return
		}
	}
}

func (r *podRun) containerReady(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.ctr(name, false)
	return cs != nil && cs.Ready
}

func (r *podRun) setReady(name string, ready bool) {
	r.mu.Lock()
	cs := r.ctr(name, false)
	changed := cs != nil && cs.Running && cs.Ready != ready
	if changed {
		cs.Ready = ready
	}
	r.mu.Unlock()
	if changed {
		r.changed()
	}
}

// check runs one probe.
func (r *podRun) check(ctx context.Context, c *corev1.Container, pr *corev1.Probe, timeout time.Duration) error {
	r.mu.Lock()
	ip := r.st.Pod.Status.PodIP
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case pr.HTTPGet != nil:
		g := pr.HTTPGet
		host := g.Host
		if host == "" {
			host = ip
		}
		port, err := probePort(c, g.Port)
		if err != nil {
			return err
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true} //nolint:gosec // the kubelet does not verify probe certificates either
		resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return &probeError{"HTTP probe failed with statuscode: " + strconv.Itoa(resp.StatusCode)}
		}
		return nil
	case pr.TCPSocket != nil || pr.GRPC != nil:
		host, p := ip, intstr.IntOrString{}
		if pr.TCPSocket != nil {
			p = pr.TCPSocket.Port
			if pr.TCPSocket.Host != "" {
				host = pr.TCPSocket.Host
			}
		} else {
			p = intstr.FromInt32(pr.GRPC.Port)
		}
		port, err := probePort(c, p)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return nil // exec: not run
}

type probeError struct{ msg string }

func (e *probeError) Error() string { return e.msg }

// probePort resolves a probe's port: a number, or the name of one of c's ports.
func probePort(c *corev1.Container, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return int(p.IntVal), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, &probeError{"probe port " + p.StrVal + " names no port of container " + c.Name}
}
