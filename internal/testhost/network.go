package testhost

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// Network is a Linux bridge on the host with a private /24 of its own: the
// host has address .1 on the bridge, and every Host made by NewHost is a
// network namespace plugged into the bridge by a veth pair, with an address
// of the /24. Hosts reach each other and the host; the host reaches them. It
// is what several pods that talk to each other (an Alertmanager cluster)
// need, where New gives isolated point-to-point targets.
type Network struct {
	Bridge string     // the bridge's name
	Subnet *net.IPNet // the /24
	HostIP string     // the host's address on the bridge (.1)

	id     string
	mu     sync.Mutex
	next   int // last octet of the next host
	hosts  map[*Host]bool
	closed bool
}

// NewNetwork creates the bridge on a random 10.x.y.0/24 that overlaps no
// route of the host (nor another Network's, which routes its /24 to its
// bridge).
func NewNetwork() (*Network, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("testhost needs iproute2's ip command: %w", err)
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b[:])
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	n := &Network{
		Bridge: "lkbr" + id,
		Subnet: subnet,
		HostIP: nthIP(subnet, 1).String(),
		id:     id,
		next:   2,
		hosts:  map[*Host]bool{},
	}
	steps := [][]string{
		{"link", "add", "name", n.Bridge, "type", "bridge"},
		{"addr", "add", n.HostIP + "/24", "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// NewHost makes a network namespace attached to the bridge, with the next
// free address of the /24 on its eth0, loopback up and a default route
// through the host.
func (n *Network) NewHost() (*Host, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("testhost: the network is closed")
	}
	if n.next > 254 {
		n.mu.Unlock()
		return nil, fmt.Errorf("testhost: network %s is full", n.Subnet)
	}
	i := n.next
	n.next++
	h := &Host{
		Namespace: fmt.Sprintf("lookout-%s-%d", n.id, i),
		HostIP:    n.HostIP,
		IP:        nthIP(n.Subnet, i).String(),
		hostLink:  fmt.Sprintf("lk%sh%d", n.id, i),
		network:   n,
	}
	n.hosts[h] = true
	n.mu.Unlock()

	peer := fmt.Sprintf("lk%sp%d", n.id, i)
	steps := [][]string{
		{"netns", "add", h.Namespace},
		{"link", "add", h.hostLink, "type", "veth", "peer", "name", peer},
		{"link", "set", h.hostLink, "master", n.Bridge},
		{"link", "set", h.hostLink, "up"},
		{"link", "set", peer, "netns", h.Namespace},
		{"-n", h.Namespace, "link", "set", peer, "name", "eth0"},
		{"-n", h.Namespace, "addr", "add", h.IP + "/24", "dev", "eth0"},
		{"-n", h.Namespace, "link", "set", "eth0", "up"},
		{"-n", h.Namespace, "link", "set", "lo", "up"},
		{"-n", h.Namespace, "route", "add", "default", "via", n.HostIP},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// Close removes every namespace and link the network created, then the
// bridge. It is safe to call more than once.
func (n *Network) Close() {
	n.mu.Lock()
	n.closed = true
	hosts := make([]*Host, 0, len(n.hosts))
	for h := range n.hosts {
		hosts = append(hosts, h)
	}
	n.mu.Unlock()
	for _, h := range hosts {
		h.Close()
	}
	_ = exec.Command("ip", "link", "del", n.Bridge).Run()
}

func (n *Network) forget(h *Host) {
	n.mu.Lock()
	delete(n.hosts, h)
	n.mu.Unlock()
}

// freeSubnet picks a random 10.x.y.0/24 (x in 100..199, away from New's
// 10.200+ range) that overlaps none of the host's routes, in any table.
func freeSubnet() (*net.IPNet, error) {
	out, err := exec.Command("ip", "-o", "-4", "route", "show", "table", "all").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip route show: %v: %s", err, out)
	}
	var used []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "unicast", "local", "broadcast", "multicast", "blackhole", "unreachable", "prohibit", "throw", "nat", "anycast":
			f = f[1:]
		}
		if len(f) == 0 || f[0] == "default" {
			continue // the default route overlaps everything: it is no claim
		}
		p := f[0]
		if !strings.Contains(p, "/") {
			p += "/32"
		}
		if _, ipn, err := net.ParseCIDR(p); err == nil {
			used = append(used, ipn)
		}
	}
	var b [2]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		cand := &net.IPNet{IP: net.IPv4(10, 100+b[0]%100, b[1], 0).To4(), Mask: net.CIDRMask(24, 32)}
		if !overlapsAny(cand, used) {
			return cand, nil
		}
	}
	return nil, errors.New("testhost: no free 10.x.y.0/24 found among the host's routes")
}

func overlapsAny(c *net.IPNet, used []*net.IPNet) bool {
	for _, u := range used {
		if u.Contains(c.IP) || c.Contains(u.IP) {
			return true
		}
	}
	return false
}

func nthIP(subnet *net.IPNet, i int) net.IP {
	ip := make(net.IP, 4)
	copy(ip, subnet.IP.To4())
	ip[3] = byte(i)
	return ip
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Do runs fn on an OS thread switched into the host's network namespace.
// Sockets fn opens (net.Listen, net.Dial to an IP address) belong to the
// namespace for their whole life, also after Do returns.
func (h *Host) Do(fn func() error) error { return InNamespace(h.Namespace, fn) }

// InNamespace runs fn on an OS thread switched into the named network
// namespace (one made by `ip netns add`, under /run/netns), then switches
// back. Only fn's own goroutine is in the namespace: sockets must be opened
// by fn itself, not by goroutines it starts.
func InNamespace(name string, fn func() error) error {
	target, err := os.Open("/run/netns/" + name)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer target.Close()
	runtime.LockOSThread()
	// The thread's own namespace: /proc/thread-self, not /proc/self, which
	// is the main thread's.
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := setns(target.Fd()); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", name, err)
	}
	fnErr := fn()
	if err := setns(orig.Fd()); err != nil {
		// The thread is stuck in the namespace: leave it locked, so that
		// the runtime ends it with this goroutine instead of reusing it.
		return fmt.Errorf("leave network namespace %s: %w", name, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// EnterNamespace switches the calling OS thread into the named network
// namespace for good: for a process about to exec a program there (exec
// keeps the calling thread's namespaces). Call runtime.LockOSThread first.
func EnterNamespace(name string) error {
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer f.Close()
	if err := setns(f.Fd()); err != nil {
		return fmt.Errorf("enter network namespace %s: %w", name, err)
	}
	return nil
}

func setns(fd uintptr) error {
	if _, _, errno := syscall.Syscall(sysSetns, fd, syscall.CLONE_NEWNET, 0); errno != 0 {
		return errno
	}
	return nil
}
