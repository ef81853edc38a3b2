package provider

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragops/ragops/hack/localnode/internal/svcproxy"
	"github.com/virtual-kubelet/virtual-kubelet/log"
	corev1 "k8s.io/api/core/v1"
)

// The local cluster has no DNS server: each pod gets its own hosts file, bound at /etc/hosts in
// its containers, that names the pod and every Service with a ClusterIP (written by the node's
// Service proxy, package svcproxy): NAME.NAMESPACE.svc.cluster.local, NAME.NAMESPACE.svc,
// NAME.NAMESPACE and, for the pod's own namespace, NAME. It is rewritten in place (same inode,
// so the bind mount shows the new content) whenever the Services change. The host's own
// /etc/hosts follows, so names that resolved on the host still do.

const hostsPath = "/etc/hosts"

// SetServices records the Services the pods' hosts files name and rewrites the hosts file of
// every pod that has one (svcproxy.Config.OnServices).
func (p *Provider) SetServices(svcs []svcproxy.Service) {
	p.mu.Lock()
	p.services = svcs
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		if _, err := os.Stat(r.hostsFile()); err == nil {
			if err := r.writeHosts(); err != nil {
				log.L.WithError(err).WithField("pod", r.key()).Warn("cannot rewrite the pod's hosts file")
			}
		}
	}
}

func (r *podRun) hostsFile() string { return filepath.Join(r.dir, "hosts") }

// writeHosts writes the pod's hosts file in place.
func (r *podRun) writeHosts() error {
	r.p.mu.Lock()
	svcs := r.p.services
	r.p.mu.Unlock()
	pod := r.snapshot()
	host, _ := os.ReadFile(hostsPath)
	b := hostsContent(pod, hostname(pod), svcs, host)
	r.hostsMu.Lock()
	defer r.hostsMu.Unlock()
	f, err := os.OpenFile(r.hostsFile(), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// hostsContent is a pod's hosts file: localhost, the pod's own name, the Services, then the
// host's hosts file.
func hostsContent(pod *corev1.Pod, hostname string, svcs []svcproxy.Service, host []byte) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by the local node (hack/localnode): the pod, the cluster's Services, then the host's /etc/hosts.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if ip := pod.Status.PodIP; ip != "" {
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	for _, s := range svcs {
		fmt.Fprintf(&b, "%s\t%s.%s.svc.cluster.local %s.%s.svc %s.%s", s.ClusterIP, s.Name, s.Namespace, s.Name, s.Namespace, s.Name, s.Namespace)
		if s.Namespace == pod.Namespace {
			fmt.Fprintf(&b, " %s", s.Name)
		}
		b.WriteByte('\n')
	}
	if len(host) > 0 {
		b.WriteString("# The host's /etc/hosts:\n")
		b.Write(host)
		if host[len(host)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
