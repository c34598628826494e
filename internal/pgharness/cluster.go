package pgharness

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// T is what the harness reports to: a *testing.T, or the bench's runner.
// Fatalf must not return; Cleanup runs its functions last first when the
// run ends.
type T interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Failed() bool
}

// Command runs `lookout instance`: Path with Args before the subcommand's
// own, and Env added to the environment (a test re-executes its own binary).
type Command struct {
	Path string
	Args []string
	Env  []string
}

// Cluster is a PostgresCluster's worth of instances without the controller:
// the config Secret, the Pods and a manager process per instance.
type Cluster struct {
	T     T
	Name  string
	NS    string
	Dir   string
	Cfg   pgcontract.Config
	Insts map[string]*Instance
	Names []string
	// User and Password of the application user the writer connects as.
	User, Password string
	// Args are more arguments of every instance manager, after its own.
	Args []string

	env     *Env
	manager Command
	writer  *writers
	// switchovers counts the planned switchovers, for their triggers.
	switchovers int
}

// Instance is one pod: its network namespace, data and manager process.
type Instance struct {
	Name   string
	Host   *testhost.Host
	Dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// NewCluster creates the namespace, the config Secret and n instances, and
// starts their managers; Close, registered with t.Cleanup, undoes it. Each
// of prepare runs before the config Secret is written and the first
// instance starts (to write files under Dir, add Args or change Cfg).
func NewCluster(t T, env *Env, manager Command, n int, cfg pgcontract.Config, prepare ...func(*Cluster)) *Cluster {
	t.Helper()
	ctx := context.Background()
	c := &Cluster{T: t, Name: "pg", NS: fmt.Sprintf("pg-%d", time.Now().UnixNano()%1e9), Insts: map[string]*Instance{},
		User: "app", Password: "app-" + RandomString(8), env: env, manager: manager}
	dir, err := os.MkdirTemp("", "lookout-pg-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	// The postgres user must reach the data directories below.
	c.must(os.Chmod(dir, 0o755))
	c.Dir = dir
	t.Cleanup(c.Close)
	cs := env.Clientset
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.NS}}, metav1.CreateOptions{})
	c.must(err)
	// No kube-controller-manager makes the namespace's default
	// ServiceAccount, which admission wants for a pod.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: c.NS}}
	_, err = cs.CoreV1().ServiceAccounts(c.NS).Create(ctx, sa, metav1.CreateOptions{})
	c.must(err)
	secrets := filepath.Join(dir, "secrets")
	c.must(os.MkdirAll(secrets, 0o700))
	c.must(os.WriteFile(filepath.Join(secrets, pgcontract.ReplicationPasswordFile), []byte(RandomString(16)), 0o600))
	if cfg.Users == nil {
		cfg.Users = []pgcontract.User{{Name: c.User, Databases: []string{"app"}, Verifier: scramVerifier(c.Password)}}
	}
	c.Cfg = cfg
	for _, p := range prepare {
		p(c)
	}
	c.WriteConfig()
	for i := range n {
		name := fmt.Sprintf("%s-%d", c.Name, i)
		c.Names = append(c.Names, name)
		c.addInstance(name)
	}
	return c
}

// WriteConfig writes c.Cfg to the config Secret the managers read.
func (c *Cluster) WriteConfig() {
	c.T.Helper()
	data, err := json.Marshal(c.Cfg)
	c.must(err)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pgcontract.ConfigSecretName(c.Name), Namespace: c.NS},
		Data:       map[string][]byte{pgcontract.ConfigKey: data},
	}
	ctx := context.Background()
	if _, err := c.env.Clientset.CoreV1().Secrets(c.NS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		_, err := c.env.Clientset.CoreV1().Secrets(c.NS).Create(ctx, s, metav1.CreateOptions{})
		c.must(err)
	}
}

// addInstance makes the instance's network namespace and Pod, then starts
// its manager.
func (c *Cluster) addInstance(name string) {
	c.T.Helper()
	h, err := c.env.Network.NewHost()
	c.must(err)
	in := &Instance{Name: name, Host: h, Dir: filepath.Join(c.Dir, name)}
	c.must(os.MkdirAll(in.Dir, 0o755))
	c.Insts[name] = in
	c.createPod(name)
	c.Start(name)
}

// createPod makes the instance's Pod, running at its address, as a
// StatefulSet and a kubelet would.
func (c *Cluster) createPod(name string) {
	c.T.Helper()
	ctx := context.Background()
	ip := c.Insts[name].Host.IP
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS, Labels: map[string]string{
			pgcontract.LabelCluster: c.Name, pgcontract.LabelInstance: name, pgcontract.LabelInstanceSet: "00",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "database", Image: "lookout"}}},
	}
	created, err := c.env.Clientset.CoreV1().Pods(c.NS).Create(ctx, pod, metav1.CreateOptions{})
	c.must(err)
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	_, err = c.env.Clientset.CoreV1().Pods(c.NS).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	c.must(err)
}

// Start runs the instance's manager in its namespace, as a kubelet would
// (re)start its container.
func (c *Cluster) Start(name string) {
	c.T.Helper()
	in := c.Insts[name]
	args := append([]string{"instance",
		"--cluster", c.Name, "--pgdata", in.PGData(), "--socket-dir", in.SocketDir(),
		"--tls-dir", filepath.Join(in.Dir, "tls"), "--secrets-dir", filepath.Join(c.Dir, "secrets"),
		"--listen", fmt.Sprintf("%s:%d", in.Host.IP, pgcontract.ManagerPort), "--kubeconfig", c.env.Kubeconfig, "--bin-dir", c.env.BinDir},
		c.Args...)
	c.run(in, []string{pgcontract.EnvPodIP + "=" + in.Host.IP}, args...)
}

// run runs the lookout subcommand args in the instance's namespace, with
// the pod's name and namespace (and env) in its environment and its output
// appended to the instance's log.
func (c *Cluster) run(in *Instance, env []string, args ...string) {
	c.T.Helper()
	logf, err := os.OpenFile(in.LogPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	c.must(err)
	cmd := exec.Command("ip", append(append([]string{"netns", "exec", in.Host.Namespace, c.manager.Path}, c.manager.Args...), args...)...)
	cmd.Env = append(append(append(os.Environ(), c.manager.Env...),
		pgcontract.EnvPodName+"="+in.Name, pgcontract.EnvPodNamespace+"="+c.NS), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.must(cmd.Start())
	in.cmd, in.exited = cmd, make(chan struct{})
	exited := in.exited
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
}

// PGData is the instance's data directory: pg15, or the major a major
// upgrade moved it to (pgcontract.MajorFile).
func (in *Instance) PGData() string {
	dir := filepath.Join(in.Dir, "data")
	if b, err := os.ReadFile(filepath.Join(dir, pgcontract.MajorFile)); err == nil {
		return filepath.Join(dir, "pg"+strings.TrimSpace(string(b)))
	}
	return filepath.Join(dir, "pg15")
}

// SocketDir is where postgres listens on a Unix socket: reachable from the
// host whatever happens to the instance's network.
func (in *Instance) SocketDir() string { return filepath.Join(in.Dir, "run") }

// LogPath is the manager's log (its stdout and stderr, every start).
func (in *Instance) LogPath() string { return filepath.Join(in.Dir, "manager.log") }

// pids are every process in the instance's network namespace: its manager,
// postgres and each backend (postgres makes each its own session, so no
// process group holds them all).
func (in *Instance) pids() []int {
	out, _ := exec.Command("ip", "netns", "pids", in.Host.Namespace).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		var p int
		if _, err := fmt.Sscan(f, &p); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// Signal sends sig to every process of the instance.
func (in *Instance) Signal(sig syscall.Signal) {
	for _, p := range in.pids() {
		_ = syscall.Kill(p, sig)
	}
}

// Kill SIGKILLs every process of the instance and waits until none is left.
func (c *Cluster) Kill(name string) {
	c.T.Helper()
	in := c.Insts[name]
	deadline := time.Now().Add(30 * time.Second)
	for {
		in.Signal(syscall.SIGKILL)
		if len(in.pids()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("processes of %s survive SIGKILL: %v", name, in.pids())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if in.exited != nil {
		<-in.exited
	}
}

// DeletePod is `kubectl delete pod --grace-period 0 --force`, then what the
// StatefulSet does about it: the processes are killed, the Pod object is
// deleted and, once it is gone, made again and its manager started on the
// data the volume kept.
func (c *Cluster) DeletePod(name string) {
	c.T.Helper()
	c.Kill(name)
	ctx := context.Background()
	pods := c.env.Clientset.CoreV1().Pods(c.NS)
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	c.must(err)
	c.WaitFor(30*time.Second, "the pod object gone", func() (bool, string) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	c.createPod(name)
	c.Start(name)
}

// Cut takes the instance's link down: it reaches nothing, not even the
// apiserver, and nothing reaches it. Heal brings it back.
func (c *Cluster) Cut(name string) {
	c.T.Helper()
	c.must(ipCmd("-n", c.Insts[name].Host.Namespace, "link", "set", "eth0", "down"))
}

func (c *Cluster) Heal(name string) {
	c.T.Helper()
	ns := c.Insts[name].Host.Namespace
	c.must(ipCmd("-n", ns, "link", "set", "eth0", "up"))
	c.must(ipCmd("-n", ns, "route", "replace", "default", "via", c.env.Network.HostIP))
}

// CutAPIServer drops every packet from the instance to the apiserver, as
// an apiserver that stops answering it does: its requests hang until they
// time out, while postgres, its manager and S3 answer as before.
// HealAPIServer lets them through again.
func (c *Cluster) CutAPIServer(name string) { c.T.Helper(); c.apiserverRule(name, "-I") }

func (c *Cluster) HealAPIServer(name string) { c.T.Helper(); c.apiserverRule(name, "-D") }

func (c *Cluster) apiserverRule(name, op string) {
	c.T.Helper()
	host, port, err := net.SplitHostPort(c.env.proxy.addr())
	c.must(err)
	c.must(ipCmd("netns", "exec", c.Insts[name].Host.Namespace,
		"iptables", op, "OUTPUT", "-p", "tcp", "-d", host, "--dport", port, "-j", "DROP"))
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Close stops the writers, kills every instance, and removes what the
// cluster made; with T failed, it logs the tail of each manager's log.
func (c *Cluster) Close() {
	c.StopWriters()
	for _, in := range c.Insts {
		in.killAll()
		c.logTail(in, "manager")
		in.Host.Close()
		removeSharedMemory(in.PGData())
	}
	_ = c.env.Clientset.CoreV1().Namespaces().Delete(context.Background(), c.NS, metav1.DeleteOptions{})
	_ = os.RemoveAll(c.Dir)
}

// killAll SIGKILLs every process of the instance (continued first, should
// it be stopped) until none is left, and waits for its first process.
func (in *Instance) killAll() {
	for range 100 {
		in.Signal(syscall.SIGCONT)
		in.Signal(syscall.SIGKILL)
		if len(in.pids()) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if in.exited != nil {
		<-in.exited
	}
}

// logTail logs the end of the instance's log when the run failed.
func (c *Cluster) logTail(in *Instance, what string) {
	if !c.T.Failed() {
		return
	}
	if data, err := os.ReadFile(in.LogPath()); err == nil {
		c.T.Logf("--- %s %s log (last 60 lines) ---\n%s", in.Name, what, tail(string(data), 60))
	}
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

// Status is what the instance's manager serves at /status.
func (c *Cluster) Status(name string) (pgcontract.Status, error) {
	var st pgcontract.Status
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get(c.ManagerURL(name) + pgcontract.PathStatus)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// ManagerURL is where the instance's manager serves (status, metrics, the
// backup endpoint).
func (c *Cluster) ManagerURL(name string) string {
	return fmt.Sprintf("http://%s:%d", c.Insts[name].Host.IP, pgcontract.ManagerPort)
}

// Holder is the Lease's holder.
func (c *Cluster) Holder() string {
	l, err := c.env.Clientset.CoordinationV1().Leases(c.NS).Get(context.Background(), pgcontract.LeaseName(c.Name), metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// ConnString reaches whichever instance accepts writes, as the application
// user.
func (c *Cluster) ConnString() string {
	var hosts []string
	for _, n := range c.Names {
		hosts = append(hosts, c.Insts[n].Host.IP)
	}
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=app target_session_attrs=read-write connect_timeout=1 sslmode=disable",
		strings.Join(hosts, ","), c.Cfg.Port, c.User, c.Password)
}

// socketConnString reaches instance name alone, through its Unix socket: a
// client on the instance's side of a network cut.
func (c *Cluster) socketConnString(name string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=app connect_timeout=1", c.Insts[name].SocketDir(), c.Cfg.Port, c.User)
}

// SuperuserConnString reaches database db of instance name as the postgres
// superuser, through its Unix socket (on the host, where the socket is).
func (c *Cluster) SuperuserConnString(name, db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s connect_timeout=2", c.Insts[name].SocketDir(), c.Cfg.Port, db)
}

func (c *Cluster) must(err error) {
	c.T.Helper()
	if err != nil {
		c.T.Fatalf("%v", err)
	}
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

// RandomString is n random characters of the URL-safe base64 alphabet.
func RandomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}
