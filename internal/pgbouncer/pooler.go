package pgbouncer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance"
)

// Options of `lookout pgbouncer`.
type Options struct {
	Cluster    string
	Namespace  string
	PodName    string
	ConfigDir  string // the mounted Secret <cluster>-pgbouncer
	RunDir     string // private: pgbouncer.ini, userlist.txt, TLS copies
	Listen     string // the pooler's HTTP address
	Bin        string // the pgbouncer program
	RunAs      string // the OS user pgbouncer runs as when the pooler is root
	Kubeconfig string
	// HoldLimit is how long a pause lasts at most without a resume: a
	// switchover whose manager died must not leave clients waiting.
	HoldLimit time.Duration
}

// Pooler runs one pgbouncer.
type Pooler struct {
	o     Options
	log   *slog.Logger
	k     *kube
	files Files
	admin string // this start's admin password
	// lastErr is the last error looking up the primary (logged on change).
	lastErr string

	// stepMu serialises step: the loop's and a resume's.
	stepMu sync.Mutex

	mu       sync.Mutex
	cfg      pgcontract.PoolerConfig
	cfgRaw   []byte
	users    []byte
	primary  string // the instance pgbouncer points at
	address  string // its pod address
	cmd      *exec.Cmd
	exited   chan struct{}
	paused   bool
	pausedAt time.Time
	wake     chan struct{}
}

// New checks the options and connects to the API.
func New(o Options, log *slog.Logger) (*Pooler, error) {
	if o.Cluster == "" {
		return nil, errors.New("--cluster is required")
	}
	if o.Namespace == "" || o.PodName == "" {
		return nil, fmt.Errorf("$%s and $%s must be set", pgcontract.EnvPodNamespace, pgcontract.EnvPodName)
	}
	if o.RunDir == "" {
		o.RunDir = filepath.Join(os.TempDir(), "lookout-pgbouncer")
	}
	if o.HoldLimit == 0 {
		o.HoldLimit = 30 * time.Second
	}
	cs, err := pginstance.NewKubeClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	p := &Pooler{o: o, log: log.With("pooler", o.PodName), k: &kube{cs: cs, ns: o.Namespace, cluster: o.Cluster},
		admin: hex.EncodeToString(b), wake: make(chan struct{}, 1)}
	p.files = Files{Dir: o.RunDir}
	return p, nil
}

// Run runs pgbouncer until ctx ends or a signal asks it to stop.
func (p *Pooler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signalNotify(sigs)
	go func() {
		select {
		case s := <-sigs:
			p.log.Info("Shutting down", "signal", s.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := p.prepareDir(); err != nil {
		return err
	}
	srv, err := p.serve()
	if err != nil {
		return err
	}
	defer srv.Close()
	defer p.stop()
	go p.k.watchLease(ctx, p.wake)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-p.wake:
		}
	}
}

// prepareDir makes the private directory and copies the certificate files
// into it, readable by the user pgbouncer runs as.
func (p *Pooler) prepareDir() error {
	if err := os.MkdirAll(p.o.RunDir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		key  string
		dest *string
	}{{"ca.crt", &p.files.CA}, {"tls.crt", &p.files.Cert}, {"tls.key", &p.files.Key}} {
		data, err := os.ReadFile(filepath.Join(p.o.ConfigDir, f.key))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		path := filepath.Join(p.o.RunDir, f.key)
		if err := p.writeFile(path, data); err != nil {
			return err
		}
		*f.dest = path
	}
	return p.chownRunDir()
}

// step rereads the configuration and the primary, and (re)starts or reloads
// pgbouncer when either changed.
func (p *Pooler) step(ctx context.Context) error {
	p.stepMu.Lock()
	defer p.stepMu.Unlock()
	raw, err := os.ReadFile(filepath.Join(p.o.ConfigDir, pgcontract.PoolerConfigKey))
	if err != nil {
		p.log.Warn("Reading the configuration", "err", err)
		return nil
	}
	users, err := os.ReadFile(filepath.Join(p.o.ConfigDir, pgcontract.PoolerUserlistKey))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Warn("Reading the userlist", "err", err)
		return nil
	}
	var cfg pgcontract.PoolerConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		p.log.Warn("Parsing the configuration", "err", err)
		return nil
	}
	primary, address, err := p.k.primary(ctx)
	if msg := fmt.Sprint(err); err != nil && msg != p.lastErr {
		p.log.Warn("Looking up the primary", "err", err)
		p.lastErr = msg
	} else if err == nil {
		p.lastErr = ""
	}
	p.mu.Lock()
	changed := !bytes.Equal(raw, p.cfgRaw) || !bytes.Equal(users, p.users)
	moved := address != "" && address != p.address
	// Without a holder (between a lost primary and the next one) the last
	// address stays: clients wait in the pool or fail on their own.
	if address == "" {
		address, primary = p.address, p.primary
	}
	running := p.cmd != nil
	p.mu.Unlock()
	if address == "" {
		return nil // no primary known yet: nothing to point at
	}
	if !changed && !moved && running {
		return nil
	}
	if err := p.writeFile(p.files.Ini(), Ini(cfg, p.files, address)); err != nil {
		return err
	}
	if err := p.writeFile(p.files.Userlist(), Userlist(users, p.admin)); err != nil {
		return err
	}
	p.mu.Lock()
	p.cfg, p.cfgRaw, p.users = cfg, raw, users
	p.mu.Unlock()
	if !running {
		if err := p.start(); err != nil {
			return err
		}
	} else if err := p.adminCommand(ctx, "RELOAD"); err != nil {
		p.log.Warn("RELOAD on the admin console failed: sending SIGHUP", "err", err)
		if err := p.signal(syscall.SIGHUP); err != nil {
			return err
		}
	}
	// Noted once pgbouncer has the file: a resume waits for this.
	p.mu.Lock()
	p.primary, p.address = primary, address
	p.mu.Unlock()
	if moved {
		p.log.Info("Pointing at the primary", "primary", primary, "address", address)
	}
	return nil
}

func (p *Pooler) start() error {
	args := []string{}
	if os.Geteuid() == 0 {
		// pgbouncer refuses to run as root.
		args = append(args, "-u", p.o.RunAs)
	}
	cmd := exec.Command(p.o.Bin, append(args, p.files.Ini())...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start pgbouncer: %w", err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.log.Warn("pgbouncer exited", "err", err)
		close(exited)
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd, p.paused = nil, false
		}
		p.mu.Unlock()
	}()
	p.log.Info("Started pgbouncer", "pid", cmd.Process.Pid)
	return nil
}

func (p *Pooler) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	return cmd.Process.Signal(sig)
}

// stop asks pgbouncer to shut down (SIGINT: safe shutdown, waiting for
// transactions) and kills it after 10 s.
func (p *Pooler) stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// ready: pgbouncer runs, points at a primary and accepts connections.
func (p *Pooler) ready() bool {
	p.mu.Lock()
	ok, port := p.cmd != nil && p.address != "", p.cfg.Port
	p.mu.Unlock()
	if !ok {
		return false
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// console opens the admin console over loopback (TLS when clients get it).
func (p *Pooler) console(ctx context.Context) (*pgx.Conn, error) {
	p.mu.Lock()
	port := p.cfg.Port
	p.mu.Unlock()
	ssl := "disable"
	if p.files.Cert != "" {
		ssl = "require"
	}
	cs := fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=pgbouncer sslmode=%s connect_timeout=2 default_query_exec_mode=simple_protocol",
		port, AdminUser, p.admin, ssl)
	return pgx.Connect(ctx, cs)
}

// adminCommand runs one admin console command (PAUSE, RESUME), within ctx.
func (p *Pooler) adminCommand(ctx context.Context, command string) error {
	conn, err := p.console(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, command)
	return err
}

func (p *Pooler) writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := p.chown(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// chown gives a file to the user pgbouncer runs as, when that is another.
func (p *Pooler) chown(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(p.o.RunAs)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(path, uid, gid)
}

func (p *Pooler) chownRunDir() error { return p.chown(p.o.RunDir) }
