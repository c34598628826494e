package pginstance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// errRestore marks a restore that could not start or did not finish: the
// instance reports why (State Failed) and tries again when the Config
// changes. Nothing was written to the source repository.
var errRestore = errors.New("restore")

// restoreArgs are the options of commands against the repository a new
// cluster is restored from.
func (b *backrest) restoreArgs(stanza string) []string {
	return []string{"--config=" + b.restoreConfPath(), "--config-include-path=" + b.restoreConfDir, "--stanza=" + stanza}
}

// restoreOption is the value of --name=value in options, or "".
func restoreOption(options []string, name string) string {
	for _, o := range options {
		if v, ok := strings.CutPrefix(o, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// targetTimeFormats are the forms of --target a time restore takes
// (PostgreSQL's recovery_target_time input).
var targetTimeFormats = []string{
	"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999Z07:00",
	time.RFC3339Nano, "2006-01-02 15:04:05.999999 MST",
}

func parseTargetTime(s string) (time.Time, error) {
	for _, f := range targetTimeFormats {
		if t, err := time.Parse(f, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("target time %q is not a time with its zone (2006-01-02 15:04:05+00)", s)
}

// checkRestore reads the source repository before anything is written:
// the stanza exists and holds a backup, and a time target is not before
// the first backup ended. Its error is the reason reported.
func (m *Manager) checkRestore(cfg *pgcontract.Config) error {
	r := cfg.Restore
	conf := renderBackRestConf(r.Stanza, []pgcontract.Repo{r.Repo}, nil, m.br.lockDir(), m.o.PGDATA, m.o.SocketDir, cfg.Port)
	if err := m.br.rn.writeFile(m.br.restoreConfPath(), []byte(conf)); err != nil {
		return err
	}
	return m.br.checkTarget(m.br.restoreArgs(r.Stanza), r.Stanza, r.Repo.Name, r.Options)
}

// checkTarget reads the repository (args select it and the stanza): the
// stanza exists and holds a backup, and a time target is not before the
// first backup ended.
func (b *backrest) checkTarget(args []string, stanza, repo string, options []string) error {
	// A repository that does not answer is reported after about four
	// I/O timeouts.
	out, err := b.run(append(args, "info", "--output=json", "--log-level-console=warn", "--io-timeout=10")...)
	if err != nil {
		return fmt.Errorf("read repository %s: %v", repo, err)
	}
	infos, err := parseInfo(out)
	if err != nil {
		return err
	}
	if len(infos) == 0 || infos[0].Status.Code != 0 {
		msg := "not found"
		if len(infos) > 0 {
			msg = infos[0].Status.Message
			for _, rs := range infos[0].Repo {
				if rs.Status.Code != 0 {
					msg = rs.Status.Message
				}
			}
		}
		return fmt.Errorf("stanza %q in repository %s: %s", stanza, repo, msg)
	}
	backups := infos[0].Backup
	if len(backups) == 0 {
		return fmt.Errorf("stanza %q in repository %s holds no backup", stanza, repo)
	}
	if restoreOption(options, "type") == "time" {
		target, err := parseTargetTime(restoreOption(options, "target"))
		if err != nil {
			return err
		}
		return targetAfterBackup(target, stanza, backups[0].Label, time.Unix(backups[0].Timestamp.Stop, 0))
	}
	return nil
}

// targetAfterBackup refuses a target time pgBackRest cannot restore to:
// before the first backup (label) ended, or in the whole second it ended
// (pgBackRest records the end in seconds, and restores from a backup that
// ended in an earlier second than the target).
func targetAfterBackup(target time.Time, stanza, label string, ended time.Time) error {
	if target.Before(ended) {
		return fmt.Errorf("target time %s is before the first backup of stanza %q ended (%s, %s)",
			target.UTC().Format(time.RFC3339), stanza, label, ended.UTC().Format(time.RFC3339))
	}
	if !ended.Before(target.Truncate(time.Second)) {
		return fmt.Errorf("target time %s is in the second the first backup of stanza %q ended (%s, %s): pgBackRest needs a target in a later second",
			target.UTC().Format(time.RFC3339Nano), stanza, label, ended.UTC().Format(time.RFC3339))
	}
	return nil
}

// restorePrimary makes the data directory of a new cluster's first
// instance from a backup, replays WAL from the repository to the target
// (or its end) and promotes. pgBackRest's recovery settings are removed
// afterwards: the instance archives to its own cluster's repositories.
func (m *Manager) restorePrimary(ctx context.Context, cfg *pgcontract.Config) error {
	r := cfg.Restore
	m.setState("Restoring", fmt.Sprintf("pgbackrest restore of stanza %q from %s", r.Stanza, r.Repo.Name))
	fail := func(err error) error {
		m.pg.stop(syscall.SIGQUIT, 0)
		_ = os.RemoveAll(m.o.PGDATA)
		return fmt.Errorf("%w: %v", errRestore, err)
	}
	_ = os.RemoveAll(m.o.PGDATA)
	if err := os.MkdirAll(m.o.PGDATA, 0o700); err != nil {
		return err
	}
	if err := m.pg.rn.chown(m.o.PGDATA); err != nil {
		return err
	}
	start := time.Now()
	if _, err := m.br.run(restoreCommand(m.br.restoreArgs(r.Stanza), r.Options)...); err != nil {
		return fail(err)
	}
	if err := m.replayAndPromote(ctx, cfg, r.Repo.Name); err != nil {
		return fail(err)
	}
	m.log.Info("Restored and promoted", "stanza", r.Stanza, "repo", r.Repo.Name, "options", strings.Join(r.Options, " "),
		"duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// restoreCommand is pgbackrest restore with args and options; a recovery
// target promotes once reached, unless the options say otherwise.
func restoreCommand(args, options []string) []string {
	args = append(slices.Clone(args), options...)
	if typ := restoreOption(options, "type"); typ != "" && typ != "default" && typ != "immediate" && restoreOption(options, "target-action") == "" {
		args = append(args, "--target-action=promote")
	}
	return append(args, "restore")
}

// replayAndPromote starts postgres on a data directory pgbackrest restore
// just wrote, waits until it replayed WAL from the repository to the
// target (or its end) and promoted, and removes pgBackRest's recovery
// settings.
func (m *Manager) replayAndPromote(ctx context.Context, cfg *pgcontract.Config, repo string) error {
	if err := m.pg.includeConf(); err != nil {
		return err
	}
	m.setState("Restoring", "replaying WAL from "+repo)
	if err := m.startAsPrimary(ctx, cfg); err != nil {
		return err
	}
	for {
		var inRecovery bool
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := m.conn.QueryRow(qctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery)
		cancel()
		if err == nil && !inRecovery {
			break
		}
		if m.pg.running() == nil {
			return fmt.Errorf("postgres stopped while replaying WAL (%s): the target is not in the repository's WAL", describe(m.pg.status))
		}
		if err != nil && m.conn.IsClosed() {
			m.conn = nil
			if err := m.connect(ctx); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 200*time.Millisecond)
	}
	for _, p := range []string{"restore_command", "recovery_target", "recovery_target_name", "recovery_target_time", "recovery_target_xid",
		"recovery_target_lsn", "recovery_target_inclusive", "recovery_target_timeline", "recovery_target_action", "archive_mode"} {
		if _, err := m.conn.Exec(ctx, "ALTER SYSTEM RESET "+p); err != nil {
			return fmt.Errorf("reset %s: %w", p, err)
		}
	}
	if _, err := m.conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	return nil
}

// restoreFailed reports why a restore failed, gives up the Lease it may
// have taken (the next attempt starts from the election), and waits for a
// new Config to try again with.
func (m *Manager) restoreFailed(ctx context.Context, cfg *pgcontract.Config, err error) *pgcontract.Config {
	m.log.Error("Restore failed", "err", err)
	m.mu.Lock()
	m.role = ""
	m.mu.Unlock()
	if l, lerr := m.k.getLease(ctx); lerr == nil && holder(l) == m.o.PodName {
		_ = m.k.deleteLease(ctx, l)
	}
	m.setState("Failed", strings.TrimPrefix(err.Error(), errRestore.Error()+": "))
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-m.cfgw.changed:
			if next := m.config(); next.Generation != cfg.Generation {
				return next
			}
		}
	}
	return cfg
}
