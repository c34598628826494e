package localpod

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/testhost"
)

// The test binary doubles as the container program: TestMain runs the
// helper when the container's environment asks for it.
const helperEnv = "LOCALPOD_TEST_HELPER"

func TestMain(m *testing.M) {
	MaybeMountExec()
	if os.Getenv(pidHelperEnv) != "" {
		pidHelperMain()
		os.Exit(0)
	}
	if os.Getenv(helperEnv) != "" {
		helperMain()
		os.Exit(0)
	}
	if os.Getenv(userHelperEnv) != "" {
		userHelperMain()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperInfo is what the helper container reports about its world.
type helperInfo struct {
	PodIP    string            `json:"podIP"`
	PodName  string            `json:"podName"`
	Args     []string          `json:"args"`
	Hosts    string            `json:"hosts"`
	Addrs    []string          `json:"addrs"`
	Lookups  map[string]string `json:"lookups"`
	Volume   string            `json:"volume"`
	APIEcho  string            `json:"apiEcho"`
	APIError string            `json:"apiError,omitempty"`
}

// helperMain serves /info and /fetch on the --listen address (from the
// container's args, with $(POD_IP) expanded by localpod). It writes a file
// into its emptyDir volume first, then reports what it reads back.
func helperMain() {
	var listen, volume string
	var lookups []string
	for _, a := range os.Args[1:] {
		switch {
		case strings.HasPrefix(a, "--listen="):
			listen = strings.TrimPrefix(a, "--listen=")
		case strings.HasPrefix(a, "--volume="):
			volume = strings.TrimPrefix(a, "--volume=")
		case strings.HasPrefix(a, "--lookup="):
			lookups = append(lookups, strings.TrimPrefix(a, "--lookup="))
		}
	}
	if err := os.WriteFile(filepath.Join(volume, "hello"), []byte("hello from "+os.Getenv("POD_NAME")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/info", func(w http.ResponseWriter, _ *http.Request) {
		info := helperInfo{PodIP: os.Getenv("POD_IP"), PodName: os.Getenv("POD_NAME"), Args: os.Args[1:], Lookups: map[string]string{}}
		b, _ := os.ReadFile("/etc/hosts")
		info.Hosts = string(b)
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			info.Addrs = append(info.Addrs, a.String())
		}
		for _, name := range lookups {
			ips, err := net.LookupHost(name)
			if err != nil {
				info.Lookups[name] = "error: " + err.Error()
			} else {
				info.Lookups[name] = strings.Join(ips, ",")
			}
		}
		v, err := os.ReadFile(filepath.Join(volume, "hello"))
		if err != nil {
			info.Volume = "error: " + err.Error()
		} else {
			info.Volume = string(v)
		}
		info.APIEcho, err = echo(net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")), "ping from "+info.PodName)
		if err != nil {
			info.APIError = err.Error()
		}
		_ = json.NewEncoder(w).Encode(info)
	})
	mux.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	})
	err := http.ListenAndServe(listen, mux) //nolint:gosec // test helper
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

func echo(addr, msg string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(c, msg); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// startEcho stands in for the apiserver: a TCP echo on the host's loopback.
func startEcho(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "apiserver: %s\n", sc.Text())
				}
			}()
		}
	}()
	return l
}

// noObjects is a client for pods without Secret or ConfigMap volumes.
type noObjects struct{ client.Reader }

func (noObjects) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func helperPod(mountDir string, lookups ...string) corev1.PodSpec {
	args := []string{"--listen=$(POD_IP):8081", "--volume=" + mountDir}
	for _, l := range lookups {
		args = append(args, "--lookup="+l)
	}
	return corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{
			Name:    "helper",
			Command: []string{"/bin/helper"},
			Args:    args,
			Env: []corev1.EnvVar{
				{Name: helperEnv, Value: "1"},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: mountDir}},
		}},
	}
}

func getInfo(t *testing.T, ip string) helperInfo {
	t.Helper()
	var info helperInfo
	resp, err := http.Get("http://" + ip + ":8081/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info
}

// selfAsRoot is the test binary, which doubles as the containers' program; it fails the
// test unless it runs as root, which what it tests needs.
func selfAsRoot(t *testing.T, what string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root: " + what)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

func TestPodRunsInANetworkNamespaceWithItsIPHostsAndAnAPIServerProxy(t *testing.T) {
	self := selfAsRoot(t, "mounts and network namespaces")
	network, err := testhost.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer network.Close()
	hostA, err := network.NewHost()
	if err != nil {
		t.Fatal(err)
	}
	hostB, err := network.NewHost()
	if err != nil {
		t.Fatal(err)
	}
	api := startEcho(t)
	apiPort := api.Addr().(*net.TCPAddr).Port
	// A mount point that does not exist on the host: both pods use it, and
	// it must be gone only after the second stops.
	base, err := os.MkdirTemp("", "lookout-localpod-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	mountDir := filepath.Join(base, "mnt", "data")

	hosts := map[string]string{"pod-a.peers": hostA.IP, "pod-b.peers": hostB.IP, "pod-b.peers.ns.svc": hostB.IP}
	start := func(name string, h *testhost.Host) *Pod {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p, err := Start(ctx, Options{
			Pod:           helperPod(mountDir, "pod-a.peers", "pod-b.peers", "pod-b.peers.ns.svc", name),
			PodName:       name,
			PodNamespace:  "ns",
			Images:        map[string]string{"/bin/helper": self},
			Client:        noObjects{},
			APIServerHost: "127.0.0.1",
			APIServerPort: apiPort,
			NetNS:         h.Namespace,
			PodIP:         h.IP,
			Hosts:         hosts,
			Dir:           t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := WaitHTTP(ctx, "http://"+h.IP+":8081/info", 20*time.Second); err != nil {
			p.Stop()
			b, _ := os.ReadFile(p.Containers["helper"].LogPath)
			t.Fatalf("%v; log:\n%s", err, b)
		}
		return p
	}
	podA := start("pod-a", hostA)
	defer podA.Stop()
	podB := start("pod-b", hostB)
	defer podB.Stop()

	for _, c := range []struct {
		pod  *Pod
		name string
		h    *testhost.Host
	}{{podA, "pod-a", hostA}, {podB, "pod-b", hostB}} {
		info := getInfo(t, c.h.IP) // host → pod, on the pod's IP
		t.Logf("%s: %+v", c.name, info)
		if info.PodIP != c.h.IP || info.PodName != c.name {
			t.Errorf("%s: POD_IP %q POD_NAME %q, want %s %s", c.name, info.PodIP, info.PodName, c.h.IP, c.name)
		}
		if info.Args[0] != "--listen="+c.h.IP+":8081" {
			t.Errorf("%s: args %q: $(POD_IP) not expanded", c.name, info.Args)
		}
		if !containsPrefix(info.Addrs, c.h.IP+"/") {
			t.Errorf("%s: interface addresses %v lack the pod IP: not in its namespace", c.name, info.Addrs)
		}
		for name, want := range map[string]string{"pod-a.peers": hostA.IP, "pod-b.peers": hostB.IP, "pod-b.peers.ns.svc": hostB.IP, c.name: c.h.IP} {
			if got := info.Lookups[name]; got != want {
				t.Errorf("%s: %s resolves to %q, want %s; /etc/hosts:\n%s", c.name, name, got, want, info.Hosts)
			}
		}
		if want := "apiserver: ping from " + c.name; info.APIEcho != want {
			t.Errorf("%s: through the apiserver proxy got %q (%s), want %q", c.name, info.APIEcho, info.APIError, want)
		}
		if c.pod.APIProxy == "" || !strings.HasPrefix(c.pod.APIProxy, "127.0.0.1:") {
			t.Errorf("%s: APIProxy %q", c.name, c.pod.APIProxy)
		}
		if want := "hello from " + c.name; info.Volume != want {
			t.Errorf("%s: volume reads %q, want %q", c.name, info.Volume, want)
		}
	}
	// pod → pod by name.
	resp, err := http.Get("http://" + hostA.IP + ":8081/fetch?url=" + "http://pod-b.peers:8081/info")
	if err != nil {
		t.Fatal(err)
	}
	var viaA helperInfo
	err = json.NewDecoder(resp.Body).Decode(&viaA)
	resp.Body.Close()
	if err != nil || viaA.PodName != "pod-b" {
		t.Errorf("pod-a fetching pod-b by name: %+v, %v", viaA, err)
	}
	// The host's /etc/hosts is untouched.
	if b, _ := os.ReadFile("/etc/hosts"); strings.Contains(string(b), "pod-a.peers") {
		t.Error("the pod's hosts entries leaked into the host's /etc/hosts")
	}

	// Stopping pod A stops its proxy and keeps B's shared mount point.
	proxyA := podA.APIProxy
	podA.Stop()
	err = testhost.InNamespace(hostA.Namespace, func() error {
		c, err := net.DialTimeout("tcp", proxyA, time.Second)
		if err == nil {
			c.Close()
			return fmt.Errorf("the proxy %s still accepts after Stop", proxyA)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if info := getInfo(t, hostB.IP); info.Volume != "hello from pod-b" || info.APIEcho != "apiserver: ping from pod-b" {
		t.Errorf("pod-b after pod-a stopped: volume %q, api %q (%s)", info.Volume, info.APIEcho, info.APIError)
	}
	if _, err := os.Stat(mountDir); err != nil {
		t.Errorf("mount point removed while pod-b uses it: %v", err)
	}
	podB.Stop()
	if _, err := os.Stat(filepath.Join(base, "mnt")); !os.IsNotExist(err) {
		t.Errorf("mount points left behind after both pods stopped: %v", err)
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"POD_IP": "10.1.2.3", "A": "x"}
	for in, want := range map[string]string{
		"[$(POD_IP)]:9094":  "[10.1.2.3]:9094",
		"$(A)$(A)":          "xx",
		"$$(A)":             "$(A)",
		"$(UNKNOWN)":        "$(UNKNOWN)",
		"cost $5":           "cost $5",
		"$(A":               "$(A",
		"plain":             "plain",
		"a$":                "a$",
		"$()":               "$()",
		"--peer=$(A).svc:1": "--peer=x.svc:1",
	} {
		if got := expandVars(in, vars); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
	env := containerEnv(Options{PodIP: "10.9.9.9", PodName: "p"}, corev1.Container{Env: []corev1.EnvVar{
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "ADDR", Value: "$(POD_IP):80"},
		{Name: "LATER", Value: "$(NEXT)"},
		{Name: "NEXT", Value: "n"},
	}})
	got := fmt.Sprint(env)
	if want := "[[POD_IP 10.9.9.9] [ADDR 10.9.9.9:80] [LATER $(NEXT)] [NEXT n]]"; got != want {
		t.Errorf("env %s, want %s", got, want)
	}
}
