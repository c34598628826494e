package pginstance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// A major upgrade (pgcontract.MajorUpgrade), as the instances carry it out:
//
//  1. The primary runs initdb for the new major next to its data (same
//     encoding, locale and data checksums) and pg_upgrade --check against
//     its running server. A refusal ends the upgrade there: CheckFailed, the
//     old major serving as before.
//  2. The replicas see the primary at Stopping, stop postgres and wait
//     (Stopped): none of them may take over while the primary is down.
//  3. Once every replica stopped, the primary checkpoints, shuts down fast
//     and runs pg_upgrade --link. Up to this point a failure puts the old
//     major back: pg_upgrade's rename of global/pg_control (to
//     pg_control.old, when linking starts) is undone, the new directory
//     removed and the old server started again (Failed). Then the new
//     major's name is written to MajorFile, and only then is the new server
//     started: from then on the old data is never started again (its files
//     are the new server's, linked).
//  4. The new server runs as primary (the Lease was kept all along):
//     Upgraded, with the downtime. vacuumdb --analyze-in-stages runs in the
//     background, and the old directory is removed.
//  5. Each replica clones the new primary afresh into the new major's
//     directory, writes MajorFile, removes its old data and streams.
//
// The pods' arguments never change: a manager started on the old
// directory's --pgdata follows MajorFile (resolveData).

// upgradeState is what a manager remembers of the major upgrade it takes
// part in; the loop alone reads and writes it.
type upgradeState struct {
	token    string
	from, to int
	// newRn runs the new major's programs.
	newRn *runner
	// stopping: the primary passed the check and waits for the replicas
	// to stop (since then).
	stopping time.Time
	// waiting: a replica stopped for the upgrade, waiting for the primary.
	waiting bool
	// polled is when the primary's status was last asked for.
	polled time.Time
}

// How long the primary waits for its replicas to stop before it gives the
// upgrade up, and how long a pg_upgrade may run.
const (
	upgradeStopPatience = 2 * time.Minute
	upgradePollEvery    = 500 * time.Millisecond
)

// envUpgradeFault, set on an instance manager by a test, makes the step it
// names fail ("upgrade": pg_upgrade --link fails at once, after the old
// server was shut down). Nothing sets it outside tests.
const envUpgradeFault = "LOOKOUT_TEST_UPGRADE_FAULT"

// dataMajor is the major of a data directory named pg<major>; 0 if not.
func dataMajor(pgdata string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(pgdata), "pg"))
	if err != nil {
		return 0
	}
	return n
}

// majorDir is the data directory of major next to pgdata.
func majorDir(pgdata string, major int) string {
	return filepath.Join(filepath.Dir(pgdata), fmt.Sprintf("pg%d", major))
}

// binDirFor finds the bin directory of major: beside given
// (…/<other>/bin → …/<major>/bin) when that holds postgres, else the first
// match of globs.
func binDirFor(given string, globs []string, major int) (string, error) {
	m := strconv.Itoa(major)
	var candidates []string
	if given != "" {
		if parent := filepath.Dir(given); filepath.Base(given) == "bin" {
			candidates = append(candidates, filepath.Join(filepath.Dir(parent), m, "bin"))
		}
	}
	for _, g := range globs {
		candidates = append(candidates, strings.Replace(g, "*", m, 1))
	}
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "postgres")); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL %d binaries in %s", major, strings.Join(candidates, ", "))
}

// resolveData settles the data directory and binaries: the major MajorFile
// names when a major upgrade started one, else --pgdata's; an upgrade
// interrupted before the new server started leaves the old data as it was.
func (o *Options) resolveData() error {
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(o.PGDATA), pgcontract.MajorFile)); err == nil {
		if m, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && m != dataMajor(o.PGDATA) {
			bin, err := binDirFor(o.BinDir, o.BinDirGlobs, m)
			if err != nil {
				return fmt.Errorf("%s names PostgreSQL %d: %w", pgcontract.MajorFile, m, err)
			}
			o.PGDATA, o.BinDir = majorDir(o.PGDATA, m), bin
			return nil
		}
	}
	if o.BinDir == "" {
		bin, err := binDirFor("", o.BinDirGlobs, dataMajor(o.PGDATA))
		if err != nil {
			return err
		}
		o.BinDir = bin
	}
	// A manager that died during pg_upgrade --link.
	if linkingStarted(o.PGDATA) {
		if oldStartable(o.PGDATA) {
			return restorePGControl(o.PGDATA)
		}
		return errors.New("pg_upgrade --link was interrupted after the new server had run on the linked files: " +
			"neither major may be started without a look (docs/postgres-instance-manager.md, major upgrades)")
	}
	return nil
}

// linkingStarted: pg_upgrade --link renamed the old data's global/pg_control
// to pg_control.old as it started linking.
func linkingStarted(pgdata string) bool {
	ctl := filepath.Join(pgdata, "global", "pg_control")
	_, err := os.Stat(ctl + ".old")
	_, cur := os.Stat(ctl)
	return err == nil && os.IsNotExist(cur)
}

// deleteScript is what pg_upgrade writes in its working directory (the data
// volume's root) after linking, just before it starts the new server on
// the linked files for the last time.
const deleteScript = "delete_old_cluster.sh"

// oldStartable: the new server has not run on the linked files, so the old
// data is as it was but for the renamed pg_control (PostgreSQL's pg_upgrade
// documentation: "If you did not start the new cluster, the old cluster
// was unmodified except ... pg_control").
func oldStartable(pgdata string) bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(pgdata), deleteScript))
	return os.IsNotExist(err)
}

// restorePGControl undoes pg_upgrade --link's rename of global/pg_control
// in the old data directory; only while oldStartable.
func restorePGControl(pgdata string) error {
	if !linkingStarted(pgdata) {
		return nil
	}
	ctl := filepath.Join(pgdata, "global", "pg_control")
	return os.Rename(ctl+".old", ctl)
}

// upgradeStep is this instance's part in cfg.MajorUpgrade; true when it
// took the step (the usual primary or replica step waits).
func (m *Manager) upgradeStep(ctx context.Context, cfg *pgcontract.Config, role string) (bool, error) {
	if m.upg.waiting {
		return true, m.waitForPrimary(ctx, cfg)
	}
	u := cfg.MajorUpgrade
	if role == pgcontract.RolePrimary {
		if !m.upg.stopping.IsZero() {
			return m.stopAndUpgrade(ctx, cfg)
		}
		if u == nil || u.Token == m.upg.token || u.From != dataMajor(m.o.PGDATA) {
			return false, nil
		}
		m.mu.Lock()
		up := m.up
		m.mu.Unlock()
		if !up || m.conn == nil || m.conn.IsClosed() {
			return false, nil
		}
		return true, m.checkUpgrade(ctx, cfg, u)
	}
	mine := dataMajor(m.o.PGDATA)
	// A replica asks the primary only while the cluster is to run a newer
	// major than its data.
	if (u == nil && cfg.PostgresVersion <= mine) || time.Since(m.upg.polled) < upgradePollEvery {
		return false, nil
	}
	m.upg.polled = time.Now()
	h, st, ok := m.primaryStatus(ctx)
	if !ok {
		return false, nil
	}
	pu := st.MajorUpgrade
	switch {
	case u != nil && u.Token != m.upg.token && u.From == mine && pu != nil && pu.Token == u.Token && pu.Step == pgcontract.UpgradeStopping:
		m.setState("Upgrading", "stopped while "+h+" upgrades to PostgreSQL "+strconv.Itoa(u.To))
		m.stopForUpgrade(ctx, upgradeState{token: u.Token, from: u.From, to: u.To, waiting: true})
		return true, nil
	case st.Ready && majorOfVersion(st.PostgresVersion) > mine:
		// The primary runs a newer major (this instance restarted during
		// the upgrade, or missed it): clone it afresh.
		m.stopForUpgrade(ctx, upgradeState{token: m.upg.token, from: mine, to: majorOfVersion(st.PostgresVersion), waiting: true})
		return true, nil
	}
	return false, nil
}

// stopForUpgrade stops a replica's postgres, keeping its data, until the
// primary runs the new major of u (or gives the upgrade up).
func (m *Manager) stopForUpgrade(ctx context.Context, u upgradeState) {
	m.upg = u
	m.setUpgrade(pgcontract.UpgradeStopped, "", u.token, u.from, u.to)
	m.label(ctx, "")
	m.mu.Lock()
	m.fenced = true
	m.mu.Unlock()
	m.pg.stop(syscall.SIGINT, restartPatience)
}

// primaryStatus is the status of the instance that holds the Lease.
func (m *Manager) primaryStatus(ctx context.Context) (string, pgcontract.Status, bool) {
	m.mu.Lock()
	h := holder(m.lease)
	m.mu.Unlock()
	if h == "" || h == m.o.PodName {
		return h, pgcontract.Status{}, false
	}
	ip, err := m.podIP(ctx, h, false)
	if err != nil {
		return h, pgcontract.Status{}, false
	}
	st, err := fetchStatus(ctx, &http.Client{Timeout: time.Second}, ip)
	if err != nil || st.Role != pgcontract.RolePrimary {
		return h, st, false
	}
	return h, st, true
}

func majorOfVersion(v string) int {
	n, _ := strconv.Atoi(v[:len(v)-len(strings.TrimLeft(v, "0123456789"))])
	return n
}

// setUpgrade records this instance's step.
func (m *Manager) setUpgrade(step, errMsg, token string, from, to int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status.MajorUpgrade
	if st == nil || st.Token != token || st.From != from || st.To != to {
		now := time.Now()
		st = &pgcontract.MajorUpgradeStatus{Token: token, From: from, To: to, Started: &now}
	} else {
		c := *st
		st = &c
	}
	st.Step, st.Error = step, errMsg
	switch step {
	case pgcontract.UpgradeUpgraded, pgcontract.UpgradeCloned, pgcontract.UpgradeCheckFailed, pgcontract.UpgradeFailed:
		now := time.Now()
		st.Finished = &now
	}
	m.status.MajorUpgrade = st
	m.log.Info("Major upgrade", "step", step, "from", from, "to", to, "error", errMsg)
}

// checkUpgrade is step 1 on the primary: initdb of the new major beside the
// old data, and pg_upgrade --check against the running server.
func (m *Manager) checkUpgrade(ctx context.Context, cfg *pgcontract.Config, u *pgcontract.MajorUpgrade) error {
	m.upg = upgradeState{token: u.Token, from: u.From, to: u.To}
	m.setUpgrade(pgcontract.UpgradeChecking, "", u.Token, u.From, u.To)
	m.setState("Running", fmt.Sprintf("checking the upgrade to PostgreSQL %d", u.To))
	fail := func(err error) error {
		_ = os.RemoveAll(majorDir(m.o.PGDATA, u.To))
		m.setUpgrade(pgcontract.UpgradeCheckFailed, err.Error(), u.Token, u.From, u.To)
		m.setState("Running", "")
		return nil
	}
	bin, err := binDirFor(m.o.BinDir, m.o.BinDirGlobs, u.To)
	if err != nil {
		return fail(err)
	}
	if m.upg.newRn, err = newRunner(bin, m.o.PostgresUser, []string{"LC_ALL=C"}, m.pg.rn.reaper, os.Stderr); err != nil {
		return fail(err)
	}
	args, err := m.initdbLikeOld(ctx)
	if err != nil {
		return fail(err)
	}
	newData := majorDir(m.o.PGDATA, u.To)
	_ = os.RemoveAll(newData) // a failed attempt's
	if _, err := m.upg.newRn.run("initdb", append([]string{"-D", newData}, args...)...); err != nil {
		return fail(err)
	}
	if out, err := m.pgUpgrade(cfg, "--check"); err != nil {
		return fail(upgradeError(out, err))
	}
	m.upg.stopping = time.Now()
	m.setUpgrade(pgcontract.UpgradeStopping, "", u.Token, u.From, u.To)
	return nil
}

// initdbLikeOld are initdb's options for a new cluster pg_upgrade accepts:
// the old one's encoding, locale and data checksums, and the same
// superuser and authentication as initdb.
func (m *Manager) initdbLikeOld(ctx context.Context) ([]string, error) {
	var enc, collate, ctype string
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.conn.QueryRow(qctx, `SELECT pg_encoding_to_char(encoding), datcollate, datctype FROM pg_database WHERE datname = 'template1'`).
		Scan(&enc, &collate, &ctype); err != nil {
		return nil, fmt.Errorf("read the old cluster's encoding and locale: %w", err)
	}
	args := []string{"-U", "postgres", "--encoding=" + enc, "--lc-collate=" + collate, "--lc-ctype=" + ctype,
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-instructions"}
	out, err := m.pg.rn.run("pg_controldata", "-D", m.o.PGDATA)
	if err != nil {
		return nil, err
	}
	if checksums(out) {
		args = append(args, "--data-checksums")
	}
	return args, nil
}

// checksums: pg_controldata reports a data page checksum version.
func checksums(controldata string) bool {
	for _, line := range strings.Split(controldata, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Data page checksum version" {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

// pgUpgrade runs the new major's pg_upgrade from the old data to the new
// directory; its working directory (which it must be able to write) is the
// data volume's root.
func (m *Manager) pgUpgrade(cfg *pgcontract.Config, mode string) (string, error) {
	oldBin := m.o.BinDir
	newData := majorDir(m.o.PGDATA, m.upg.to)
	return m.upg.newRn.runIn(filepath.Dir(m.o.PGDATA), "pg_upgrade", mode,
		"-b", oldBin, "-B", m.upg.newRn.binDir, "-d", m.o.PGDATA, "-D", newData, "-U", "postgres",
		"-p", strconv.Itoa(cfg.Port), "-P", strconv.Itoa(cfg.Port+1), "-s", m.o.SocketDir)
}

// upgradeError is pg_upgrade's own explanation: the lines that say what
// failed, rather than its progress report.
func upgradeError(out string, err error) error {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasSuffix(l, "ok") || strings.HasPrefix(l, "Performing") || strings.HasPrefix(l, "----") ||
			strings.HasPrefix(l, "Checking") && !strings.Contains(l, "fatal") {
			continue
		}
		keep = append(keep, l)
	}
	if len(keep) == 0 {
		return err
	}
	if len(keep) > 6 {
		keep = keep[:6]
	}
	return errors.New("pg_upgrade: " + strings.Join(keep, " "))
}

// stopAndUpgrade is steps 2–4 on the primary: once every other instance
// stopped, the shutdown, pg_upgrade --link and the new server's start.
func (m *Manager) stopAndUpgrade(ctx context.Context, cfg *pgcontract.Config) (bool, error) {
	others, err := m.otherInstances(ctx)
	if err != nil {
		return false, nil
	}
	var running []string
	client := &http.Client{Timeout: time.Second}
	for _, n := range others {
		ip, err := m.podIP(ctx, n, false)
		if err != nil {
			running = append(running, n)
			continue
		}
		st, err := fetchStatus(ctx, client, ip)
		if err != nil || st.MajorUpgrade == nil || st.MajorUpgrade.Token != m.upg.token || st.MajorUpgrade.Step != pgcontract.UpgradeStopped {
			running = append(running, n)
		}
	}
	if len(running) > 0 {
		if time.Since(m.upg.stopping) > upgradeStopPatience {
			m.upg.stopping = time.Time{}
			_ = os.RemoveAll(majorDir(m.o.PGDATA, m.upg.to))
			m.setUpgrade(pgcontract.UpgradeFailed, "replicas did not stop for the upgrade: "+strings.Join(running, ", "), m.upg.token, m.upg.from, m.upg.to)
		}
		return false, nil
	}
	m.upg.stopping = time.Time{}
	return true, m.upgradePrimary(ctx, cfg)
}

// upgradePrimary shuts the old major down, runs pg_upgrade --link and starts
// the new major as primary; on a failure before that start, the old major
// runs again.
func (m *Manager) upgradePrimary(ctx context.Context, cfg *pgcontract.Config) error {
	u := m.upg
	oldData, newData, oldBin := m.o.PGDATA, majorDir(m.o.PGDATA, u.to), m.o.BinDir
	down := time.Now()
	m.setUpgrade(pgcontract.UpgradeUpgrading, "", u.token, u.from, u.to)
	m.setState("Upgrading", fmt.Sprintf("pg_upgrade --link to PostgreSQL %d", u.to))
	err := m.connect(ctx)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = m.conn.Exec(cctx, "CHECKPOINT")
		cancel()
	}
	if err != nil {
		_ = os.RemoveAll(newData)
		m.setUpgrade(pgcontract.UpgradeFailed, "checkpoint before the shutdown: "+err.Error(), u.token, u.from, u.to)
		return nil
	}
	m.conn.Close(ctx)
	m.conn = nil
	m.mu.Lock()
	m.up = false
	m.mu.Unlock()
	m.setOffline(true)
	defer m.setOffline(false)
	m.pg.stop(syscall.SIGINT, restartPatience)

	_ = os.Remove(filepath.Join(filepath.Dir(oldData), deleteScript)) // an earlier attempt's
	var out string
	if os.Getenv(envUpgradeFault) == "upgrade" {
		err = errors.New("injected by " + envUpgradeFault)
	} else {
		out, err = m.pgUpgrade(cfg, "--link")
	}
	if err != nil && !oldStartable(oldData) {
		// The new server ran on the linked files: the old data may not
		// start again; pg_upgrade had done its work, so on to the new.
		m.log.Warn("pg_upgrade failed after the new server had run on the linked files: going on with the new major", "err", upgradeError(out, err))
		err = nil
	}
	if err != nil {
		err = upgradeError(out, err)
		m.log.Warn("pg_upgrade failed: starting the old major again", "err", err)
		if rerr := restorePGControl(oldData); rerr != nil {
			return fmt.Errorf("pg_upgrade failed (%v) and pg_control could not be put back: %w", err, rerr)
		}
		_ = os.RemoveAll(newData)
		if serr := m.pg.start(); serr != nil {
			return fmt.Errorf("pg_upgrade failed (%v) and the old server does not start: %w", err, serr)
		}
		if cerr := m.connect(ctx); cerr != nil {
			return cerr
		}
		m.setUpgrade(pgcontract.UpgradeFailed, err.Error(), u.token, u.from, u.to)
		m.setState("Running", "")
		return nil
	}

	// The commit point: from here on the new major is this instance's.
	if err := m.pg.rn.writeFile(filepath.Join(filepath.Dir(oldData), pgcontract.MajorFile), []byte(strconv.Itoa(u.to)+"\n")); err != nil {
		return fmt.Errorf("record the upgrade to PostgreSQL %d: %w", u.to, err)
	}
	m.o.PGDATA, m.o.BinDir = newData, u.newRn.binDir
	m.pg.pgdata, m.pg.rn = newData, u.newRn
	// No standby streams yet: the new major starts with commits waiting for
	// none, and the usual steps widen the set as the clones stream.
	m.mu.Lock()
	m.appliedSync, m.pendingSync = syncSet{}, nil
	m.mu.Unlock()
	// The new major starts under a Lease renewed since: a renewal that
	// stalled during pg_upgrade would fence it the moment it is online.
	// When another instance holds the Lease it does not start: the manager
	// exits and comes back fenced, as after any crash.
	if err := m.renewOffline(ctx, func(err error) {
		m.setState("Upgrading", "upgraded to PostgreSQL "+strconv.Itoa(u.to)+"; renew the lease: "+err.Error())
	}); err != nil {
		return fmt.Errorf("upgraded to PostgreSQL %d, but another instance took the lease meanwhile", u.to)
	}
	if err := m.pg.includeConf(); err != nil {
		return err
	}
	if err := m.startAsPrimary(ctx, cfg); err != nil {
		return err
	}
	downtime := time.Since(down)
	m.confGen, m.usersGen = cfg.Generation, 0
	m.mu.Lock()
	m.status.MajorUpgrade.Downtime = pgcontract.Duration{Duration: downtime}
	m.mu.Unlock()
	m.setUpgrade(pgcontract.UpgradeUpgraded, "", u.token, u.from, u.to)
	m.log.Info("Upgraded", "from", u.from, "to", u.to, "downtime", downtime.Round(time.Millisecond), "old", oldBin)
	if err := os.RemoveAll(oldData); err != nil {
		m.log.Warn("Could not remove the old data directory", "dir", oldData, "err", err)
	}
	_ = os.Remove(filepath.Join(filepath.Dir(oldData), deleteScript))
	go m.analyze(u.newRn, u.token)
	return nil
}

// analyze rebuilds the planner statistics pg_upgrade does not carry over,
// in stages (a rough set first), while the new primary serves.
func (m *Manager) analyze(rn *runner, token string) {
	if _, err := rn.run("vacuumdb", "--all", "--analyze-in-stages", "-h", m.o.SocketDir, "-p", strconv.Itoa(m.pg.port), "-U", "postgres"); err != nil {
		m.log.Warn("vacuumdb --analyze-in-stages failed", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.status.MajorUpgrade; st != nil && st.Token == token {
		c := *st
		c.Analyzed = true
		m.status.MajorUpgrade = &c
	}
}

// waitForPrimary is a stopped replica's step: clone the primary once it
// runs the new major, or start the old major again when its upgrade
// failed or it is gone.
func (m *Manager) waitForPrimary(ctx context.Context, cfg *pgcontract.Config) error {
	if time.Since(m.upg.polled) < upgradePollEvery {
		return nil
	}
	m.upg.polled = time.Now()
	m.mu.Lock()
	silent := time.Since(m.leaseSeen)
	m.mu.Unlock()
	h, st, ok := m.primaryStatus(ctx)
	pu := st.MajorUpgrade
	failed := ok && pu != nil && pu.Token == m.upg.token && m.upg.token != "" &&
		(pu.Step == pgcontract.UpgradeFailed || pu.Step == pgcontract.UpgradeCheckFailed)
	// A primary whose Lease falls silent while it answers that it runs
	// pg_upgrade is slow to reach the apiserver, not lost.
	upgrading := ok && pu != nil && pu.Token == m.upg.token && m.upg.token != "" && pu.Step == pgcontract.UpgradeUpgrading
	if failed || silent > cfg.LeaseDuration.Duration && !upgrading {
		why := "the primary is lost"
		if failed {
			why = "the primary's upgrade failed: " + pu.Error
		}
		m.log.Warn("Major upgrade given up: following on the old major", "why", why)
		m.upg.waiting = false
		m.setUpgrade(pgcontract.UpgradeFailed, why, m.upg.token, m.upg.from, m.upg.to)
		// The next step follows the primary (or elects one) as usual.
		m.mu.Lock()
		m.following = ""
		m.mu.Unlock()
		return nil
	}
	if !ok || !st.Ready || majorOfVersion(st.PostgresVersion) != m.upg.to {
		return nil
	}
	return m.cloneUpgraded(ctx, cfg, h)
}

// cloneUpgraded clones the upgraded primary h into the new major's
// directory, records it, removes the old data and streams.
func (m *Manager) cloneUpgraded(ctx context.Context, cfg *pgcontract.Config, h string) error {
	u := m.upg
	ip, err := m.podIP(ctx, h, true)
	if err != nil {
		return nil
	}
	bin, err := binDirFor(m.o.BinDir, m.o.BinDirGlobs, u.to)
	if err != nil {
		m.setUpgrade(pgcontract.UpgradeStopped, err.Error(), u.token, u.from, u.to)
		return nil
	}
	rn, err := newRunner(bin, m.o.PostgresUser, []string{"LC_ALL=C"}, m.pg.rn.reaper, os.Stderr)
	if err != nil {
		return err
	}
	oldData, newData := m.o.PGDATA, majorDir(m.o.PGDATA, u.to)
	m.setUpgrade(pgcontract.UpgradeCloning, "", u.token, u.from, u.to)
	m.setState("Cloning", fmt.Sprintf("pg_basebackup of PostgreSQL %d from %s", u.to, h))
	clone := &postgres{pgdata: newData, socketDir: m.pg.socketDir, port: m.pg.port, rn: rn, tls: m.pg.tls, passfile: m.pg.passfile}
	if err := clone.basebackup(ip, cfg.Port, m.o.PodName); err != nil {
		m.setUpgrade(pgcontract.UpgradeStopped, "clone: "+err.Error(), u.token, u.from, u.to)
		return nil
	}
	if err := rn.writeFile(filepath.Join(filepath.Dir(oldData), pgcontract.MajorFile), []byte(strconv.Itoa(u.to)+"\n")); err != nil {
		return err
	}
	m.o.PGDATA, m.o.BinDir = newData, bin
	m.pg.pgdata, m.pg.rn = newData, rn
	if err := os.RemoveAll(oldData); err != nil {
		m.log.Warn("Could not remove the old data directory", "dir", oldData, "err", err)
	}
	m.upg.waiting = false
	m.mu.Lock()
	m.needRewind = false
	m.mu.Unlock()
	if err := m.startStandby(cfg, h, ip); err != nil {
		return err
	}
	m.mu.Lock()
	m.fenced = false
	m.mu.Unlock()
	m.setUpgrade(pgcontract.UpgradeCloned, "", u.token, u.from, u.to)
	return nil
}
