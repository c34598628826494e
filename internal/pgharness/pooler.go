package pgharness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// PoolerPort is where the harness's poolers listen for clients.
const PoolerPort = 6432

// WithPoolers is a NewCluster prepare: the instance managers are told of
// poolers (they pause them around a switchover), as the controller tells
// them with spec.proxy.pgBouncer.
func WithPoolers(c *Cluster) {
	c.Cfg.Poolers = &pgcontract.Poolers{Token: RandomString(24), PauseTimeout: pgcontract.Duration{Duration: 5 * time.Second}}
}

// StartPooler runs `lookout pgbouncer` (and so Debian's pgbouncer) in a
// network namespace of its own, with a Pod labelled as the pooler
// Deployment's pods are, and its configuration as the controller renders it
// (transaction pooling, the application user with its SCRAM verifier);
// it returns once the pooler is ready. Its processes end with the cluster.
func (c *Cluster) StartPooler(name string) *Instance {
	c.T.Helper()
	if c.Cfg.Poolers == nil {
		c.T.Fatalf("StartPooler needs a cluster made with WithPoolers")
	}
	h, err := c.env.Network.NewHost()
	c.must(err)
	p := &Instance{Name: name, Host: h, Dir: filepath.Join(c.Dir, name)}
	conf := filepath.Join(p.Dir, "config")
	c.must(os.MkdirAll(conf, 0o755))
	cfg, err := json.Marshal(pgcontract.PoolerConfig{Port: PoolerPort, PostgresPort: c.Cfg.Port,
		Global: map[string]string{"pool_mode": "transaction"}, Token: c.Cfg.Poolers.Token})
	c.must(err)
	c.must(os.WriteFile(filepath.Join(conf, pgcontract.PoolerConfigKey), cfg, 0o600))
	var users []byte
	for _, u := range c.Cfg.Users {
		users = fmt.Appendf(users, "%q %q\n", u.Name, u.Verifier)
	}
	c.must(os.WriteFile(filepath.Join(conf, pgcontract.PoolerUserlistKey), users, 0o600))
	c.T.Cleanup(func() { c.stopPooler(p) })

	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.NS, Labels: map[string]string{
			pgcontract.LabelCluster: c.Name, pgcontract.LabelRole: pgcontract.RolePooler,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pgbouncer", Image: "lookout"}}},
	}
	created, err := c.env.Clientset.CoreV1().Pods(c.NS).Create(ctx, pod, metav1.CreateOptions{})
	c.must(err)
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: h.IP, PodIPs: []corev1.PodIP{{IP: h.IP}}}
	_, err = c.env.Clientset.CoreV1().Pods(c.NS).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	c.must(err)

	c.run(p, nil, "pgbouncer", "--cluster", c.Name, "--config-dir", conf, "--run-dir", filepath.Join(p.Dir, "run"),
		"--listen", fmt.Sprintf("%s:%d", h.IP, pgcontract.PoolerPort), "--kubeconfig", c.env.Kubeconfig)
	client := &http.Client{Timeout: time.Second}
	c.WaitFor(time.Minute, "pooler "+name+" ready", func() (bool, string) {
		resp, err := client.Get(fmt.Sprintf("http://%s:%d%s", h.IP, pgcontract.PoolerPort, pgcontract.PathReady))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// PoolerConnString reaches the database through pooler p as the application
// user; statements go unprepared, as transaction pooling needs.
func (c *Cluster) PoolerConnString(p *Instance) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=app connect_timeout=2 sslmode=disable default_query_exec_mode=simple_protocol",
		p.Host.IP, PoolerPort, c.User, c.Password)
}

// stopPooler kills every process of pooler p (pgbouncer, as another user,
// outlives its parent's death signal) and removes its namespace.
func (c *Cluster) stopPooler(p *Instance) {
	p.killAll()
	c.logTail(p, "pooler")
	p.Host.Close()
}
