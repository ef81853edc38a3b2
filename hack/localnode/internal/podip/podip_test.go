package podip

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

func TestAllocateReleaseReuse(t *testing.T) {
	leases := t.TempDir()
	a, err := New("127.77.0.0/30", leases)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2, h3 := t.TempDir(), t.TempDir(), t.TempDir()
	ip1, err := a.Allocate(h1)
	if err != nil {
		t.Fatal(err)
	}
	ip2, err := a.Allocate(h2)
	if err != nil {
		t.Fatal(err)
	}
	// A /30 has 4 addresses: the network address and the last one are never handed out.
	if ip1 != "127.77.0.1" || ip2 != "127.77.0.2" {
		t.Fatalf("got %s and %s, want 127.77.0.1 and 127.77.0.2", ip1, ip2)
	}
	if _, err := a.Allocate(h3); err == nil {
		t.Fatal("a third address from a /30: want an exhaustion error")
	}
	if b, err := os.ReadFile(filepath.Join(leases, ip1)); err != nil || string(b) != h1 {
		t.Fatalf("lease of %s = %q (%v), want %q", ip1, b, err, h1)
	}
	a.Release(ip1, h2) // not its holder: nothing happens
	if a.Held() != 2 {
		t.Fatalf("held %d after a release by the wrong holder, want 2", a.Held())
	}
	a.Release(ip1, h1)
	if _, err := os.Stat(filepath.Join(leases, ip1)); !os.IsNotExist(err) {
		t.Fatalf("lease file of %s after release: %v, want gone", ip1, err)
	}
	ip3, err := a.Allocate(h3)
	if err != nil || ip3 != ip1 {
		t.Fatalf("after release got %q (%v), want %s again", ip3, err, ip1)
	}
}

func TestTwoNodesNeverShareAnAddressAndStaleLeasesAreTaken(t *testing.T) {
	leases := t.TempDir()
	a, _ := New("127.78.0.0/24", leases)
	b, _ := New("127.78.0.0/24", leases)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		for _, al := range []*Allocator{a, b} {
			ip, err := al.Allocate(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if seen[ip] {
				t.Fatalf("%s handed out twice", ip)
			}
			seen[ip] = true
		}
	}
	// A lease whose holder folder is gone (a node that died with its state removed) is taken.
	c, _ := New("127.79.0.0/30", leases)
	gone := filepath.Join(t.TempDir(), "removed")
	if err := os.WriteFile(filepath.Join(leases, "127.79.0.1"), []byte(gone), 0o644); err != nil {
		t.Fatal(err)
	}
	live := t.TempDir()
	if err := os.WriteFile(filepath.Join(leases, "127.79.0.2"), []byte(live), 0o644); err != nil {
		t.Fatal(err)
	}
	h := t.TempDir()
	ip, err := c.Allocate(h)
	if err != nil || ip != "127.79.0.1" {
		t.Fatalf("got %q (%v), want the stale 127.79.0.1", ip, err)
	}
	if _, err := c.Allocate(t.TempDir()); err == nil {
		t.Fatal("127.79.0.2 has a live holder: want exhaustion")
	}
}

func TestReserveAfterRestart(t *testing.T) {
	leases := t.TempDir()
	a, _ := New(DefaultPrefix, leases)
	h := t.TempDir()
	ip, _ := a.Allocate(h)
	// The node restarts: a new allocator, the pod's state gives back its address.
	b, _ := New(DefaultPrefix, leases)
	if err := b.Reserve(ip, h); err != nil {
		t.Fatal(err)
	}
	next, _ := b.Allocate(t.TempDir())
	if next == ip {
		t.Fatalf("%s handed out again after Reserve", ip)
	}
	if err := b.Reserve(ip, t.TempDir()); err == nil {
		t.Fatal("Reserve of a held address by another holder: want an error")
	}
	if err := b.Reserve("127.0.0.1", h); err == nil {
		t.Fatal("Reserve outside the prefix: want an error")
	}
	if _, err := New("10.0.0.0/16", ""); err == nil {
		t.Fatal("a non-loopback prefix: want an error")
	}
	if _, err := New("127.0.0.0/8", ""); err == nil {
		t.Fatal("a prefix holding 127.0.0.1: want an error")
	}
	if !netip.MustParsePrefix(DefaultPrefix).Contains(netip.MustParseAddr(ip)) {
		t.Fatalf("%s outside %s", ip, DefaultPrefix)
	}
}
