package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/hack/localnode/internal/svcproxy"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostsContent(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a"}, Status: corev1.PodStatus{PodIP: "127.1.0.9"}}
	svcs := []svcproxy.Service{{Namespace: "a", Name: "m", ClusterIP: "127.2.0.10"}, {Namespace: "b", Name: "m", ClusterIP: "127.2.0.11"}}
	got := string(hostsContent(pod, "p", svcs, []byte("127.0.0.1 vm")))
	for _, line := range []string{
		"127.0.0.1\tlocalhost\n",
		"127.1.0.9\tp\n",
		// The short name only for the pod's own namespace.
		"127.2.0.10\tm.a.svc.cluster.local m.a.svc m.a m\n",
		"127.2.0.11\tm.b.svc.cluster.local m.b.svc m.b\n",
		"127.0.0.1 vm\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
	if strings.Index(got, "m.b.svc") > strings.Index(got, "127.0.0.1 vm") {
		t.Errorf("the Services must come before the host's entries:\n%s", got)
	}
}

// The hosts file is rewritten in place: a bind mount of it (the same inode) sees the new content.
func TestWriteHostsInPlace(t *testing.T) {
	dir := t.TempDir()
	p := &Provider{pods: map[string]*podRun{}}
	r := &podRun{p: p, dir: dir}
	r.st.Pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a"}, Status: corev1.PodStatus{PodIP: "127.1.0.9"}}
	p.pods["a/p"] = r
	if err := r.writeHosts(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(filepath.Join(dir, "hosts"))
	p.SetServices([]svcproxy.Service{{Namespace: "a", Name: "late", ClusterIP: "127.2.0.12"}})
	after, _ := os.Stat(filepath.Join(dir, "hosts"))
	if !os.SameFile(before, after) {
		t.Fatal("the hosts file was replaced, not rewritten in place")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "hosts"))
	if !strings.Contains(string(b), "127.2.0.12\tlate.a.svc.cluster.local late.a.svc late.a late\n") {
		t.Errorf("hosts file after SetServices:\n%s", b)
	}
	p.SetServices(nil)
	b, _ = os.ReadFile(filepath.Join(dir, "hosts"))
	if strings.Contains(string(b), "late") {
		t.Errorf("a deleted Service is still named:\n%s", b)
	}
}
