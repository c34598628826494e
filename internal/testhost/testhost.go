// Package testhost makes scrape targets that Kubernetes accepts in
// EndpointSlices: a network namespace of its own, joined to the host by a
// veth pair on a private /30, with a small /metrics server inside. The
// apiserver refuses loopback addresses in endpoints, so loopback targets will
// not do. A Network joins several such namespaces on one bridge, for pods
// that talk to each other. Needs root and iproute2's `ip`.
package testhost

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

const targetEnv = "LOOKOUT_TESTHOST_SERVE"

// MaybeServe must run first in main() (or TestMain) of a program that uses
// Host.ServeMetrics: in the re-executed process it serves /metrics and never
// returns.
func MaybeServe() {
	addr := os.Getenv(targetEnv)
	if addr == "" {
		return
	}
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP lookout_testhost_up A test target that is up.\n# TYPE lookout_testhost_up gauge\nlookout_testhost_up 1\n")
		fmt.Fprintf(w, "# HELP lookout_testhost_uptime_seconds Seconds since the target started.\n# TYPE lookout_testhost_uptime_seconds gauge\nlookout_testhost_uptime_seconds %f\n", time.Since(start).Seconds())
	})
	err := http.ListenAndServe(addr, mux) //nolint:gosec // test target
	fmt.Fprintln(os.Stderr, "testhost:", err)
	os.Exit(1)
}

// Host is one network namespace with an address the host can reach.
type Host struct {
	Namespace string
	HostIP    string // the host's end of the veth pair
	IP        string // the test host's address
	hostLink  string
	cmd       *exec.Cmd
	network   *Network // nil for New's point-to-point hosts
	closeOnce sync.Once
}

// New creates the namespace, the veth pair and the addresses.
func New() (*Host, error) {
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("testhost needs iproute2's ip command: %w", err)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%08x", binary.BigEndian.Uint32(b[:]))[:6]
	// 10.(200..249).x.y/30 with y a multiple of 4: unlikely to collide with
	// another run, and never with loopback.
	second, third, fourth := 200+int(b[0])%50, int(b[1]), int(b[2])&0xfc
	h := &Host{
		Namespace: "lookout-" + id,
		HostIP:    fmt.Sprintf("10.%d.%d.%d", second, third, fourth+1),
		IP:        fmt.Sprintf("10.%d.%d.%d", second, third, fourth+2),
		hostLink:  "lk" + id + "h",
	}
	peer := "lk" + id + "n"
	steps := [][]string{
		{"netns", "add", h.Namespace},
		{"link", "add", h.hostLink, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", h.Namespace},
		{"addr", "add", h.HostIP + "/30", "dev", h.hostLink},
		{"link", "set", h.hostLink, "up"},
		{"-n", h.Namespace, "addr", "add", h.IP + "/30", "dev", peer},
		{"-n", h.Namespace, "link", "set", peer, "up"},
		{"-n", h.Namespace, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			h.Close()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return h, nil
}

// ServeMetrics starts a /metrics server on IP:port inside the namespace,
// re-executing self (which must call MaybeServe first).
func (h *Host) ServeMetrics(port int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("%s:%d", h.IP, port)
	cmd := exec.Command("ip", "netns", "exec", h.Namespace, self)
	cmd.Env = append(os.Environ(), targetEnv+"="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start target in %s: %w", h.Namespace, err)
	}
	h.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("target %s not reachable from the host: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close stops the server and deletes the link and the namespace. It is safe
// to call more than once.
func (h *Host) Close() {
	h.closeOnce.Do(func() {
		if h.cmd != nil && h.cmd.Process != nil {
			_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
			_ = h.cmd.Wait()
		}
		_ = exec.Command("ip", "link", "del", h.hostLink).Run() // deletes the peer too
		_ = exec.Command("ip", "netns", "del", h.Namespace).Run()
		if h.network != nil {
			h.network.forget(h)
		}
	})
}
