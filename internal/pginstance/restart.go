package pginstance

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// standbyLimits are the parameters a hot standby may not run below the
// primary's value: a standby started with less stops recovery.
var standbyLimits = []string{"max_connections", "max_locks_per_transaction", "max_prepared_transactions", "max_wal_senders", "max_worker_processes"}

// restartPatience is how long a fast shutdown for a restart may take
// before it becomes an immediate one.
const restartPatience = 30 * time.Second

// restartStep carries out cfg.Restart when it names this instance with a
// token not carried out yet: a fast shutdown and a start, so that the
// parameters PostgreSQL reads only at start apply. A replica leaves the
// replicas' Service while it is down and streams again from the same
// primary; a primary (the controller names one only when no standby could
// take over, or when standbys must not restart before it) keeps its Lease
// throughout. True when it restarted: the step is over.
func (m *Manager) restartStep(ctx context.Context, cfg *pgcontract.Config, role string) (bool, error) {
	r := cfg.Restart
	if r == nil || r.Instance != m.o.PodName {
		return false, nil
	}
	m.mu.Lock()
	done, up, fenced, receiving, pending := m.status.RestartDone, m.up, m.fenced, m.obs.Receiving, slices.Clone(m.obs.PendingRestart)
	m.mu.Unlock()
	if r.Token == done || !up || fenced || (role != pgcontract.RolePrimary && !receiving) {
		return false, nil
	}
	if len(pending) == 0 {
		// Asked on an older observation (a former primary that restarted
		// as a standby at its switchover, say): nothing waits, so the
		// request is carried out without a restart.
		m.mu.Lock()
		m.status.RestartDone = r.Token
		m.mu.Unlock()
		return false, nil
	}
	m.setState("Restarting", "for parameters that need a restart: "+strings.Join(pending, ", "))
	start := time.Now()
	if role != pgcontract.RolePrimary {
		m.label(ctx, "")
		// Fenced while down, so that the next step does not take the stop
		// for a crash.
		m.mu.Lock()
		m.fenced = true
		m.mu.Unlock()
	}
	m.pg.stop(syscall.SIGINT, restartPatience)
	err := m.pg.start()
	m.mu.Lock()
	m.status.RestartDone = r.Token
	if role != pgcontract.RolePrimary {
		m.fenced, m.followSince = false, time.Now()
	}
	m.mu.Unlock()
	if err != nil {
		return true, err
	}
	m.log.Info("Restarted postgres", "parameters", pending, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// noteStandbyLimits records on the primary whether a pending parameter
// lowers one of standbyLimits (pg_file_settings holds the value the next
// start reads; without one, the built-in default).
func (m *Manager) noteStandbyLimits(ctx context.Context, role string) {
	m.mu.Lock()
	conn, up, pending := m.conn, m.up, m.obs.PendingRestart
	m.mu.Unlock()
	lowers := false
	if role == pgcontract.RolePrimary && up && conn != nil && slices.ContainsFunc(pending, func(p string) bool { return slices.Contains(standbyLimits, p) }) {
		var err error
		if lowers, err = lowersStandbyLimits(ctx, conn, pending); err != nil {
			m.log.Warn("Could not compare the pending parameters with the running ones", "err", err)
		}
	}
	m.mu.Lock()
	m.status.LowersStandbyLimits = lowers
	m.mu.Unlock()
}

func lowersStandbyLimits(ctx context.Context, conn *pgx.Conn, pending []string) (bool, error) {
	var names []string
	for _, p := range pending {
		if slices.Contains(standbyLimits, p) {
			names = append(names, p)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var lowers bool
	err := conn.QueryRow(ctx, `SELECT coalesce(bool_or(n.next < s.setting::bigint), false)
		FROM pg_settings s CROSS JOIN LATERAL (SELECT coalesce(
			(SELECT f.setting FROM pg_file_settings f WHERE f.name = s.name AND f.error IS NULL ORDER BY f.seqno DESC LIMIT 1),
			s.boot_val)::bigint AS next) n
		WHERE s.name = ANY($1)`, names).Scan(&lowers)
	return lowers, err
}
