// Package podip gives each pod of the local node its own loopback address. Every address of
// 127.0.0.0/8 reaches the host's lo interface on Linux, so a pod's processes can listen on its
// address (for example --listen=$(POD_IP):8080) while another pod listens on the same port at its
// own address, and the node's Service proxy forwards to podIP:targetPort.
//
// An Allocator hands out addresses of one prefix (127.1.0.0/16 by default). Which pod holds which
// address is recorded by the caller in its pod state (Reserve puts it back after a node restart)
// and, so that several local nodes on one host (test clusters side by side) never hand out the
// same address, in a host-wide lease folder: one file per address, written under a lock on the
// folder, holding the path of the pod's state folder. A lease whose holder folder no longer
// exists is stale and is taken over.
package podip

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// DefaultPrefix is where pod addresses come from unless the node says otherwise.
const DefaultPrefix = "127.1.0.0/16"

// DefaultLeaseDir is the host-wide lease folder.
const DefaultLeaseDir = "/run/localnode/pod-ips"

// Allocator hands out the addresses of a prefix. Safe for concurrent use.
type Allocator struct {
	prefix   netip.Prefix
	leaseDir string

	mu   sync.Mutex
	held map[netip.Addr]string // address -> holder (pod state folder)
	next netip.Addr
}

// New returns an allocator for prefix (an IPv4 loopback prefix of at least 4 addresses) with its
// leases in leaseDir ("" keeps no host-wide leases: only this allocator's own bookkeeping).
func New(prefix, leaseDir string) (*Allocator, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("pod address prefix %q: %w", prefix, err)
	}
	p = p.Masked()
	if !p.Addr().Is4() || !p.Addr().IsLoopback() || p.Bits() > 30 {
		return nil, fmt.Errorf("pod address prefix %q: must be an IPv4 prefix inside 127.0.0.0/8 with at least 4 addresses", prefix)
	}
	if p.Contains(netip.MustParseAddr("127.0.0.1")) {
		return nil, fmt.Errorf("pod address prefix %q holds 127.0.0.1, the node's own address", prefix)
	}
	if leaseDir != "" {
		if err := os.MkdirAll(leaseDir, 0o755); err != nil {
			return nil, fmt.Errorf("pod address leases: %w", err)
		}
	}
	return &Allocator{prefix: p, leaseDir: leaseDir, held: map[netip.Addr]string{}, next: p.Addr().Next()}, nil
}

// Prefix returns the allocator's prefix.
func (a *Allocator) Prefix() netip.Prefix { return a.prefix }

// Allocate returns a free address for holder (the pod's state folder, which must exist: a lease
// whose holder folder is missing is treated as stale). Addresses are handed out in turn, so a
// released address is not reused before the others. Errors: the prefix is exhausted.
func (a *Allocator) Allocate(holder string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	start := a.next
	for ip := start; ; {
		cand := ip
		ip = ip.Next()
		if !a.prefix.Contains(ip) || isBroadcast(a.prefix, ip) {
			ip = a.prefix.Addr().Next()
		}
		if _, taken := a.held[cand]; !taken && a.lease(cand, holder) {
			a.held[cand] = holder
			a.next = ip
			return cand.String(), nil
		}
		if ip == start {
			return "", fmt.Errorf("no free pod address left in %s", a.prefix)
		}
	}
}

// Reserve records that holder has ip (a pod loaded from the node's state after a restart).
// Errors: ip is not an address or is outside the prefix; another live holder has it.
func (a *Allocator) Reserve(ip, holder string) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return err
	}
	if !a.prefix.Contains(addr) {
		return fmt.Errorf("pod address %s is outside %s", ip, a.prefix)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.held[addr]; ok && h != holder {
		return fmt.Errorf("pod address %s is already held by %s", ip, h)
	}
	if !a.lease(addr, holder) {
		return fmt.Errorf("pod address %s is leased to another holder (%s)", ip, a.leaseFile(addr))
	}
	a.held[addr] = holder
	return nil
}

// Release frees ip if holder has it.
func (a *Allocator) Release(ip, holder string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[addr] != holder {
		return
	}
	delete(a.held, addr)
	if a.leaseDir != "" {
		if unlock, err := a.lock(); err == nil {
			if b, err := os.ReadFile(a.leaseFile(addr)); err == nil && string(b) == holder {
				os.Remove(a.leaseFile(addr))
			}
			unlock()
		}
	}
}

// Held returns how many addresses this allocator has handed out or reserved.
func (a *Allocator) Held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}

func (a *Allocator) leaseFile(addr netip.Addr) string {
	return filepath.Join(a.leaseDir, addr.String())
}

// lease takes the host-wide lease of addr for holder: true when it is (now) holder's. An
// exclusive lock on the folder's .lock file serialises nodes.
func (a *Allocator) lease(addr netip.Addr, holder string) bool {
	if a.leaseDir == "" {
		return true
	}
	unlock, err := a.lock()
	if err != nil {
		return false
	}
	defer unlock()
	path := a.leaseFile(addr)
	if b, err := os.ReadFile(path); err == nil {
		cur := strings.TrimSpace(string(b))
		if cur == holder {
			return true
		}
		if cur != "" {
			if _, err := os.Stat(cur); err == nil {
				return false // a live holder
			}
		}
		// Stale (its holder's folder is gone): taken over below.
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return os.WriteFile(path, []byte(holder), 0o644) == nil
}

func (a *Allocator) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(a.leaseDir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func isBroadcast(p netip.Prefix, ip netip.Addr) bool {
	last := p.Addr().As4()
	host := 32 - p.Bits()
	v := uint32(last[0])<<24 | uint32(last[1])<<16 | uint32(last[2])<<8 | uint32(last[3])
	v |= (1 << host) - 1
	b := ip.As4()
	return uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]) == v
}
