package pg

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// cluster is a PostgresCluster's worth of instances without the controller:
// the config Secret, the Pods and a manager process per instance.
type cluster struct {
	t     *testing.T
	name  string
	ns    string
	dir   string
	cfg   pgcontract.Config
	insts map[string]*instance
	names []string
	// user and password of the application user the writer connects as.
	user, password string
	// args are more arguments of every instance manager.
	args []string
}

type instance struct {
	name   string
	host   *testhost.Host
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// newCluster starts n instances; prepare runs before the first starts.
func newCluster(t *testing.T, n int, cfg pgcontract.Config, prepare ...func(*cluster)) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{t: t, name: "pg", ns: fmt.Sprintf("pg-%d", time.Now().UnixNano()%1e9), insts: map[string]*instance{},
		user: "app", password: "app-" + randomString(8)}
	dir, err := os.MkdirTemp("", "lookout-pg-")
	if err != nil {
		t.Fatal(err)
	}
	// The postgres user must reach the data directories below.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(c.close)
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kube-controller-manager makes the namespace's default
	// ServiceAccount, which admission wants for a pod.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: c.ns}}
	if _, err := clientset.CoreV1().ServiceAccounts(c.ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := filepath.Join(dir, "secrets")
	must(t, os.MkdirAll(secrets, 0o700))
	must(t, os.WriteFile(filepath.Join(secrets, pgcontract.ReplicationPasswordFile), []byte(randomString(16)), 0o600))
	if cfg.Users == nil {
		cfg.Users = []pgcontract.User{{Name: c.user, Databases: []string{"app"}, Verifier: scramVerifier(c.password)}}
	}
	c.cfg = cfg
	for _, p := range prepare {
		p(c)
	}
	c.writeConfig()
	for i := range n {
		name := fmt.Sprintf("%s-%d", c.name, i)
		c.names = append(c.names, name)
		c.addInstance(name)
	}
	return c
}

func (c *cluster) writeConfig() {
	c.t.Helper()
	data, err := json.Marshal(c.cfg)
	must(c.t, err)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pgcontract.ConfigSecretName(c.name), Namespace: c.ns},
		Data:       map[string][]byte{pgcontract.ConfigKey: data},
	}
	ctx := context.Background()
	if _, err := clientset.CoreV1().Secrets(c.ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		if _, err := clientset.CoreV1().Secrets(c.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// addInstance makes the instance's network namespace and Pod, then starts
// its manager.
func (c *cluster) addInstance(name string) {
	c.t.Helper()
	h, err := network.NewHost()
	must(c.t, err)
	in := &instance{name: name, host: h, dir: filepath.Join(c.dir, name)}
	must(c.t, os.MkdirAll(in.dir, 0o755))
	c.insts[name] = in
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: map[string]string{
			pgcontract.LabelCluster: c.name, pgcontract.LabelInstance: name, pgcontract.LabelInstanceSet: "00",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "database", Image: "lookout"}}},
	}
	created, err := clientset.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{})
	must(c.t, err)
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: h.IP, PodIPs: []corev1.PodIP{{IP: h.IP}}}
	_, err = clientset.CoreV1().Pods(c.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	must(c.t, err)
	c.start(name)
}

// start runs the instance's manager in its namespace, as a kubelet would
// (re)start its container.
func (c *cluster) start(name string) {
	c.t.Helper()
	in := c.insts[name]
	self, err := os.Executable()
	must(c.t, err)
	logf, err := os.OpenFile(filepath.Join(in.dir, "manager.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	must(c.t, err)
	cmd := exec.Command("ip", "netns", "exec", in.host.Namespace, self, "instance",
		"--cluster", c.name, "--pgdata", filepath.Join(in.dir, "data", "pg15"), "--socket-dir", filepath.Join(in.dir, "run"),
		"--tls-dir", filepath.Join(in.dir, "tls"), "--secrets-dir", filepath.Join(c.dir, "secrets"),
		"--listen", fmt.Sprintf("%s:%d", in.host.IP, pgcontract.ManagerPort), "--kubeconfig", kubeconfig, "--bin-dir", binDir)
	cmd.Args = append(cmd.Args, c.args...)
	cmd.Env = append(os.Environ(), instanceEnv+"=1",
		pgcontract.EnvPodName+"="+name, pgcontract.EnvPodNamespace+"="+c.ns, pgcontract.EnvPodIP+"="+in.host.IP)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	must(c.t, cmd.Start())
	in.cmd, in.log, in.exited = cmd, logf, make(chan struct{})
	exited := in.exited
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
}

// pids are every process in the instance's network namespace: its manager,
// postgres and each backend (postgres makes each its own session, so no
// process group holds them all).
func (in *instance) pids() []int {
	out, _ := exec.Command("ip", "netns", "pids", in.host.Namespace).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		var p int
		if _, err := fmt.Sscan(f, &p); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

func (in *instance) signal(sig syscall.Signal) {
	for _, p := range in.pids() {
		_ = syscall.Kill(p, sig)
	}
}

// kill SIGKILLs every process of the instance and waits until none is left.
func (c *cluster) kill(name string) {
	c.t.Helper()
	in := c.insts[name]
	deadline := time.Now().Add(30 * time.Second)
	for {
		in.signal(syscall.SIGKILL)
		if len(in.pids()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("processes of %s survive SIGKILL: %v", name, in.pids())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if in.exited != nil {
		<-in.exited
	}
}

// cut takes the instance's link down: it reaches nothing, not even the
// apiserver, and nothing reaches it. heal brings it back.
func (c *cluster) cut(name string) {
	c.t.Helper()
	must(c.t, ipCmd("-n", c.insts[name].host.Namespace, "link", "set", "eth0", "down"))
}

func (c *cluster) heal(name string) {
	c.t.Helper()
	ns := c.insts[name].host.Namespace
	must(c.t, ipCmd("-n", ns, "link", "set", "eth0", "up"))
	must(c.t, ipCmd("-n", ns, "route", "replace", "default", "via", network.HostIP))
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *cluster) close() {
	for _, in := range c.insts {
		for range 100 {
			in.signal(syscall.SIGCONT)
			in.signal(syscall.SIGKILL)
			if len(in.pids()) == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if in.exited != nil {
			<-in.exited
		}
		if c.t.Failed() {
			if data, err := os.ReadFile(filepath.Join(in.dir, "manager.log")); err == nil {
				c.t.Logf("--- %s manager log (last 60 lines) ---\n%s", in.name, tail(string(data), 60))
			}
		}
		in.host.Close()
		removeSharedMemory(filepath.Join(in.dir, "data", "pg15"))
	}
	_ = clientset.CoreV1().Namespaces().Delete(context.Background(), c.ns, metav1.DeleteOptions{})
	_ = os.RemoveAll(c.dir)
}

// removeSharedMemory removes the small System V segment a postgres killed
// with SIGKILL leaves behind: its key is the data directory's inode.
func removeSharedMemory(pgdata string) {
	var st syscall.Stat_t
	if err := syscall.Stat(pgdata, &st); err == nil {
		_ = exec.Command("ipcrm", "-M", fmt.Sprintf("0x%08x", uint32(st.Ino))).Run()
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// status is what the instance's manager serves at /status.
func (c *cluster) status(name string) (pgcontract.Status, error) {
	var st pgcontract.Status
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d%s", c.insts[name].host.IP, pgcontract.ManagerPort, pgcontract.PathStatus))
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// holder is the Lease's holder.
func (c *cluster) holder() string {
	l, err := clientset.CoordinationV1().Leases(c.ns).Get(context.Background(), pgcontract.LeaseName(c.name), metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitFor polls cond until it holds; what is the last reason it did not.
func (c *cluster) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %s: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHealthy waits until primary holds the Lease and serves as primary and
// every other instance streams from it.
func (c *cluster) waitHealthy(timeout time.Duration) string {
	c.t.Helper()
	var primary string
	c.waitFor(timeout, "every instance ready", func() (bool, string) {
		primary = c.holder()
		if primary == "" {
			return false, "no lease holder"
		}
		for _, n := range c.names {
			st, err := c.status(n)
			if err != nil {
				return false, n + ": " + err.Error()
			}
			want := pgcontract.RoleReplica
			if n == primary {
				want = pgcontract.RolePrimary
			}
			if !st.Ready || st.Role != want {
				return false, fmt.Sprintf("%s: role %q ready %v state %s %s", n, st.Role, st.Ready, st.State, st.Reason)
			}
			if n == primary {
				streaming := 0
				for _, r := range st.Replicas {
					if r.State == "streaming" {
						streaming++
					}
				}
				if streaming != len(c.names)-1 {
					return false, fmt.Sprintf("the primary streams to %d replicas: %+v", streaming, st.Replicas)
				}
			}
		}
		return true, ""
	})
	return primary
}

// connString reaches whichever instance accepts writes, as the application
// user.
func (c *cluster) connString() string {
	var hosts []string
	for _, n := range c.names {
		hosts = append(hosts, c.insts[n].host.IP)
	}
	return fmt.Sprintf("host=%s port=5432 user=%s password=%s dbname=app target_session_attrs=read-write connect_timeout=1 sslmode=disable",
		strings.Join(hosts, ","), c.user, c.password)
}

// scramVerifier is what PostgreSQL stores for password (RFC 5802, 4096
// iterations, as libpq's PQencryptPasswordConn makes it).
func scramVerifier(password string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	salted, _ := pbkdf2.Key(sha256.New, password, salt, 4096, 32)
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	server := mac(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$4096:%s$%s:%s", b64(salt), b64(stored[:]), b64(server))
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
