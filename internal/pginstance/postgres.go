package pginstance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// postgres is the data directory and the postgres child of one instance.
type postgres struct {
	pgdata    string
	socketDir string
	port      int
	rn        *runner
	tls       *tlsFiles
	passfile  string

	mu sync.Mutex
	// written is the Config.Generation of the configuration file written last.
	written int64
	pid     int
	exited  chan struct{} // closed when the running postgres exited
	status  syscall.WaitStatus
}

func (p *postgres) hasData() bool {
	_, err := os.Stat(filepath.Join(p.pgdata, "PG_VERSION"))
	return err == nil
}

// prepare makes the private socket directory and puts in it what postgres
// and its tools read as the postgres user: the password file of the
// replication user and a copy of the TLS files (postgres refuses a key other
// users may read, which a mounted Secret's usually is).
func (p *postgres) prepare(tlsDir, password string) error {
	if err := os.MkdirAll(p.socketDir, 0o700); err != nil {
		return err
	}
	if err := p.rn.chown(p.socketDir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.pgdata), 0o700); err != nil {
		return err
	}
	if err := p.rn.chown(filepath.Dir(p.pgdata)); err != nil {
		return err
	}
	esc := strings.NewReplacer(`\`, `\\`, ":", `\:`)
	p.passfile = filepath.Join(p.socketDir, "pgpass")
	line := fmt.Sprintf("*:*:*:%s:%s\n", pgcontract.ReplicationUser, esc.Replace(password))
	if err := p.rn.writeFile(p.passfile, []byte(line)); err != nil {
		return fmt.Errorf("write password file: %w", err)
	}
	if _, err := os.Stat(filepath.Join(tlsDir, "tls.crt")); err != nil {
		p.tls = nil
		return nil
	}
	files := &tlsFiles{}
	for name, dst := range map[string]*string{"tls.crt": &files.Cert, "tls.key": &files.Key, "ca.crt": &files.CA} {
		data, err := os.ReadFile(filepath.Join(tlsDir, name))
		if err != nil {
			return fmt.Errorf("read TLS file: %w", err)
		}
		*dst = filepath.Join(p.socketDir, name)
		if err := p.rn.writeFile(*dst, data); err != nil {
			return err
		}
	}
	p.tls = files
	return nil
}

// initdb creates the first primary's data directory. Checksums make
// pg_rewind possible (besides wal_log_hints) and catch torn pages.
func (p *postgres) initdb() error {
	if _, err := p.rn.run("initdb", "-D", p.pgdata, "-U", "postgres", "--data-checksums", "--encoding=UTF8", "--locale=C",
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-instructions"); err != nil {
		return err
	}
	return p.includeConf()
}

func (p *postgres) includeConf() error {
	path := filepath.Join(p.pgdata, "postgresql.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	line := "include_if_exists = '" + confFile + "'"
	if strings.Contains(string(data), line) {
		return nil
	}
	return p.rn.writeFile(path, append(data, []byte("\n"+line+"\n")...))
}

// basebackup clones the primary at host into the (absent) data directory.
func (p *postgres) basebackup(host string, port int, instance string) error {
	_ = os.RemoveAll(p.pgdata)
	ci := conninfo(host, port, instance, p.passfile, p.tls)
	if _, err := p.rn.run("pg_basebackup", "-D", p.pgdata, "-d", ci, "-X", "stream", "-c", "fast", "-w"); err != nil {
		_ = os.RemoveAll(p.pgdata)
		return err
	}
	return p.includeConf()
}

// rewind makes the stopped data directory a copy of the primary's history
// from where they diverged; when they have not, it changes nothing.
func (p *postgres) rewind(host string, port int, instance string) (string, error) {
	// pg_rewind finishes an interrupted crash recovery in single-user
	// mode, which refuses standby mode.
	if err := os.Remove(filepath.Join(p.pgdata, "standby.signal")); err != nil && !os.IsNotExist(err) {
		return "", err
	}
	ci := conninfo(host, port, instance, p.passfile, p.tls, "dbname=postgres")
	out, err := p.rn.run("pg_rewind", "-D", p.pgdata, "--source-server="+ci)
	if err != nil {
		return out, err
	}
	return out, p.includeConf()
}

// clusterState is pg_controldata's "Database cluster state": "in
// production" and "shut down" are a primary's, "in archive recovery" and
// "shut down in recovery" a standby's.
func (p *postgres) clusterState() (string, error) {
	out, err := p.rn.run("pg_controldata", "-D", p.pgdata)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Database cluster state" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("pg_controldata printed no cluster state")
}

func wasPrimary(state string) bool {
	return state == "in production" || state == "shut down" || state == "in crash recovery"
}

// writeConfig writes lookout.conf, pg_hba.conf and standby.signal.
func (p *postgres) writeConfig(in confInput, standby bool) error {
	if in.BackRest != "" {
		if err := p.rn.writeFile(in.BackRestPath, []byte(in.BackRest)); err != nil {
			return err
		}
	}
	if err := p.rn.writeFile(filepath.Join(p.pgdata, confFile), []byte(renderConf(in))); err != nil {
		return err
	}
	if err := p.rn.writeFile(filepath.Join(p.pgdata, "pg_hba.conf"), []byte(renderHBA(p.tls != nil))); err != nil {
		return err
	}
	signal := filepath.Join(p.pgdata, "standby.signal")
	if standby {
		if err := p.rn.writeFile(signal, nil); err != nil {
			return err
		}
	} else if err := os.Remove(signal); err != nil && !os.IsNotExist(err) {
		return err
	}
	p.mu.Lock()
	p.written = in.Generation
	p.mu.Unlock()
	return nil
}

// writtenGeneration is the Config.Generation of the configuration file.
func (p *postgres) writtenGeneration() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written
}

// start runs postgres as a child; its output goes to the manager's.
func (p *postgres) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid != 0 {
		return errors.New("postgres is already running")
	}
	cmd := p.rn.command("postgres", "-D", p.pgdata)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	p.pid = cmd.Process.Pid
	exited := make(chan struct{})
	p.exited = exited
	wait := p.rn.reaper.exit(p.pid)
	go func() {
		ws := <-wait
		p.mu.Lock()
		p.status, p.pid = ws, 0
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// running returns the channel closed when the running postgres exits, or
// nil when none runs.
func (p *postgres) running() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid == 0 {
		return nil
	}
	return p.exited
}

// stop shuts postgres down: SIGINT is PostgreSQL's fast shutdown (a
// checkpoint, sent to the standbys), SIGQUIT its immediate one. A fast
// shutdown that takes longer than patience becomes immediate.
func (p *postgres) stop(sig syscall.Signal, patience time.Duration) {
	p.mu.Lock()
	pid, exited := p.pid, p.exited
	p.mu.Unlock()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, sig)
	select {
	case <-exited:
		return
	case <-time.After(patience):
	}
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
	}
}

// reload asks postgres to read its configuration again.
func (p *postgres) reload() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid != 0 {
		_ = syscall.Kill(p.pid, syscall.SIGHUP)
	}
}

// connect opens a connection over the private socket as the superuser.
func (p *postgres) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres connect_timeout=2", p.socketDir, p.port))
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "lookout-instance-manager"
	return pgx.ConnectConfig(ctx, cfg)
}
