package testhost

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and links")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
}

// echoServer answers every line it reads with "<name>: <line>" until l is
// closed.
func echoServer(l net.Listener, name string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				fmt.Fprintf(c, "%s: %s\n", name, sc.Text())
			}
		}()
	}
}

func roundTrip(t *testing.T, c net.Conn, msg, want string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(c, msg); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read answer to %q: %v", msg, err)
	}
	if strings.TrimSpace(got) != want {
		t.Fatalf("answer %q, want %q", got, want)
	}
}

// listenIn opens a TCP listener inside h's namespace on addr.
func listenIn(t *testing.T, h *Host, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	if err := h.Do(func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dialFrom(t *testing.T, h *Host, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	err := h.Do(func() (err error) { c, err = net.DialTimeout("tcp", addr, 5*time.Second); return err })
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, h.Namespace, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestNetworkConnectsHostsAndTheHostAndCloseRemovesEverything(t *testing.T) {
	needRoot(t)
	n, err := NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	a, err := n.NewHost()
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.NewHost()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bridge %s %s host %s, a %s (%s), b %s (%s)", n.Bridge, n.Subnet, n.HostIP, a.IP, a.Namespace, b.IP, b.Namespace)
	if a.IP == b.IP || !n.Subnet.Contains(net.ParseIP(a.IP)) || !n.Subnet.Contains(net.ParseIP(b.IP)) || a.HostIP != n.HostIP {
		t.Fatalf("addresses: a %s b %s host %s in %s", a.IP, b.IP, a.HostIP, n.Subnet)
	}

	// A listener in each namespace, on its own address, and one on the
	// host's bridge address.
	la := listenIn(t, a, a.IP+":0")
	lb := listenIn(t, b, b.IP+":0")
	lh, err := net.Listen("tcp", n.HostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer lh.Close()
	go echoServer(la, "a")
	go echoServer(lb, "b")
	go echoServer(lh, "host")

	// host → namespace
	c, err := net.DialTimeout("tcp", la.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("host → a: %v", err)
	}
	defer c.Close()
	roundTrip(t, c, "from host", "a: from host")
	// namespace → namespace, both ways
	roundTrip(t, dialFrom(t, a, lb.Addr().String()), "from a", "b: from a")
	roundTrip(t, dialFrom(t, b, la.Addr().String()), "from b", "a: from b")
	// namespace → host's bridge address
	roundTrip(t, dialFrom(t, b, lh.Addr().String()), "from b", "host: from b")

	// The namespace is really another one: its loopback is its own.
	lo := listenIn(t, a, "127.0.0.1:0")
	go echoServer(lo, "a-lo")
	roundTrip(t, dialFrom(t, a, lo.Addr().String()), "lo", "a-lo: lo")
	if c, err := net.DialTimeout("tcp", lo.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Errorf("the host reached a's loopback listener %s", lo.Addr())
	}

	// Closing one host removes its namespace and link; the others stay.
	a.Close()
	a.Close() // idempotent
	if netnsExists(t, a.Namespace) || linkExists(t, a.hostLink) {
		t.Errorf("host a left %s or %s behind", a.Namespace, a.hostLink)
	}
	if !netnsExists(t, b.Namespace) {
		t.Errorf("closing a removed b's namespace")
	}

	n.Close()
	n.Close()
	for _, ns := range []string{a.Namespace, b.Namespace} {
		if netnsExists(t, ns) {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	if out, _ := exec.Command("ip", "-o", "link", "show").CombinedOutput(); strings.Contains(string(out), n.id) {
		t.Errorf("links of network %s left behind:\n%s", n.id, out)
	}
	if out, _ := exec.Command("ip", "-o", "-4", "route", "show", "table", "all").CombinedOutput(); strings.Contains(string(out), n.Bridge) {
		t.Errorf("routes through %s left behind:\n%s", n.Bridge, out)
	}
	if _, err := n.NewHost(); err == nil {
		t.Error("NewHost on a closed network succeeded")
	}
}

func TestFreeSubnetAvoidsRoutes(t *testing.T) {
	_, taken, _ := net.ParseCIDR("10.0.0.0/8")
	if !overlapsAny(&net.IPNet{IP: net.IPv4(10, 150, 3, 0).To4(), Mask: net.CIDRMask(24, 32)}, []*net.IPNet{taken}) {
		t.Error("10.150.3.0/24 does not overlap 10.0.0.0/8")
	}
	_, small, _ := net.ParseCIDR("10.150.3.7/32")
	if !overlapsAny(&net.IPNet{IP: net.IPv4(10, 150, 3, 0).To4(), Mask: net.CIDRMask(24, 32)}, []*net.IPNet{small}) {
		t.Error("10.150.3.0/24 does not overlap 10.150.3.7/32")
	}
	_, other, _ := net.ParseCIDR("10.150.4.0/24")
	if overlapsAny(&net.IPNet{IP: net.IPv4(10, 150, 3, 0).To4(), Mask: net.CIDRMask(24, 32)}, []*net.IPNet{other}) {
		t.Error("10.150.3.0/24 overlaps 10.150.4.0/24")
	}
}

func TestNewStillMakesAPointToPointHost(t *testing.T) {
	needRoot(t)
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l := listenIn(t, h, h.IP+":0")
	go echoServer(l, "p2p")
	c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "hi", "p2p: hi")
	h.Close()
	if netnsExists(t, h.Namespace) || linkExists(t, h.hostLink) {
		t.Errorf("%s or %s left behind", h.Namespace, h.hostLink)
	}
}

func netnsExists(t *testing.T, name string) bool {
	t.Helper()
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

func linkExists(t *testing.T, name string) bool {
	t.Helper()
	return exec.Command("ip", "link", "show", name).Run() == nil
}
