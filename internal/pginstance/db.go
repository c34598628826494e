package pginstance

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// observation is one look at a running postgres.
type observation struct {
	InRecovery       bool
	Version          string
	SystemIdentifier string
	Timeline         int
	CurrentLSN       string // primary
	ReceivedLSN      string // standby
	ReplayedLSN      string // standby
	Receiving        bool   // standby: a WAL receiver is streaming
	Connections      int64
	MaxConnections   int64
	XactCommit       int64
	XactRollback     int64
	StandbyNames     string
	Replicas         []pgcontract.ReplicaStatus
	PendingRestart   []string
}

// position is the furthest WAL this instance holds on disk: a standby's
// received position (flushed) or replayed one, a primary's current one.
func (o observation) position() uint64 {
	var best uint64
	for _, s := range []string{o.CurrentLSN, o.ReceivedLSN, o.ReplayedLSN} {
		if v, err := parseLSN(s); err == nil && v > best {
			best = v
		}
	}
	return best
}

func observe(ctx context.Context, conn *pgx.Conn) (observation, error) {
	var o observation
	var current, received, replayed, receiverStatus *string
	var receivedTLI *int32
	var checkpointTLI int32
	err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('server_version'),
		(SELECT system_identifier::text FROM pg_control_system()),
		CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END,
		pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text,
		(SELECT timeline_id FROM pg_control_checkpoint()),
		(SELECT status FROM pg_stat_wal_receiver), (SELECT received_tli FROM pg_stat_wal_receiver),
		(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'),
		current_setting('max_connections')::bigint,
		(SELECT coalesce(sum(xact_commit), 0)::bigint FROM pg_stat_database),
		(SELECT coalesce(sum(xact_rollback), 0)::bigint FROM pg_stat_database),
		current_setting('synchronous_standby_names')`).Scan(
		&o.InRecovery, &o.Version, &o.SystemIdentifier, &current, &received, &replayed, &checkpointTLI,
		&receiverStatus, &receivedTLI, &o.Connections, &o.MaxConnections, &o.XactCommit, &o.XactRollback, &o.StandbyNames)
	if err != nil {
		return o, fmt.Errorf("observe postgres: %w", err)
	}
	o.CurrentLSN, o.ReceivedLSN, o.ReplayedLSN = deref(current), deref(received), deref(replayed)
	o.Receiving = deref(receiverStatus) == "streaming"
	o.Timeline = int(checkpointTLI)
	switch {
	case !o.InRecovery:
		var walfile string
		if err := conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&walfile); err == nil && len(walfile) >= 8 {
			if tli, err := strconv.ParseInt(walfile[:8], 16, 64); err == nil {
				o.Timeline = int(tli)
			}
		}
		rows, err := conn.Query(ctx, `SELECT application_name, coalesce(state, ''), coalesce(sync_state, ''),
			coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn), 0)::bigint,
			coalesce(extract(epoch FROM replay_lag), 0)::float8
			FROM pg_stat_replication ORDER BY application_name`)
		if err != nil {
			return o, fmt.Errorf("read pg_stat_replication: %w", err)
		}
		o.Replicas, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgcontract.ReplicaStatus, error) {
			var s pgcontract.ReplicaStatus
			err := r.Scan(&s.Instance, &s.State, &s.SyncState, &s.LagBytes, &s.LagSeconds)
			return s, err
		})
		if err != nil {
			return o, fmt.Errorf("read pg_stat_replication: %w", err)
		}
	case receivedTLI != nil:
		o.Timeline = int(*receivedTLI)
	}
	// pg_settings.pending_restart is set once postgres has read the files
	// again; pg_file_settings reads them at the query, so a parameter
	// written a moment ago is pending at once.
	rows, err := conn.Query(ctx, `SELECT name FROM pg_settings WHERE pending_restart
		UNION SELECT f.name FROM pg_file_settings f JOIN pg_settings s ON s.name = f.name
			WHERE s.context = 'postmaster' AND NOT f.applied AND f.error IS NOT NULL
		ORDER BY 1`)
	if err != nil {
		return o, err
	}
	o.PendingRestart, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return o, err
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// quoteLiteral quotes a SQL string literal (standard_conforming_strings is on).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// roleVerb is CREATE for a role that does not exist yet, else ALTER.
func roleVerb(ctx context.Context, conn *pgx.Conn, role string) (string, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return "ALTER", nil
	}
	return "CREATE", nil
}

// ensureReplicationUser creates the replication user on a new primary, with
// the functions pg_rewind reads the source through.
func ensureReplicationUser(ctx context.Context, conn *pgx.Conn, password string) error {
	u := quoteIdent(pgcontract.ReplicationUser)
	verb, err := roleVerb(ctx, conn, pgcontract.ReplicationUser)
	if err != nil {
		return err
	}
	stmts := []string{
		fmt.Sprintf("%s ROLE %s WITH LOGIN REPLICATION PASSWORD %s", verb, u, quoteLiteral(password)),
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_ls_dir(text, boolean, boolean) TO " + u,
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_stat_file(text, boolean) TO " + u,
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text) TO " + u,
		"GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean) TO " + u,
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("replication user: %w", err)
		}
	}
	return nil
}

// ensureSlots keeps one physical slot per other instance and drops the
// inactive slots of instances that are gone.
func ensureSlots(ctx context.Context, conn *pgx.Conn, instances []string) error {
	rows, err := conn.Query(ctx, `SELECT slot_name, active FROM pg_replication_slots WHERE slot_type = 'physical'`)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	var name string
	var active bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &active}, func() error { have[name] = active; return nil }); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, i := range instances {
		want[slotName(i)] = true
		if _, ok := have[slotName(i)]; !ok {
			if _, err := conn.Exec(ctx, `SELECT pg_create_physical_replication_slot($1, true)`, slotName(i)); err != nil {
				return fmt.Errorf("create replication slot for %s: %w", i, err)
			}
		}
	}
	for s, active := range have {
		if !want[s] && !active {
			if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, s); err != nil {
				return fmt.Errorf("drop replication slot %s: %w", s, err)
			}
		}
	}
	return nil
}

// ensureUsers creates or updates each user with its SCRAM verifier and
// creates its databases, owned by it.
func ensureUsers(ctx context.Context, conn *pgx.Conn, users []pgcontract.User) error {
	for _, u := range users {
		verb, err := roleVerb(ctx, conn, u.Name)
		if err != nil {
			return err
		}
		stmt := fmt.Sprintf("%s ROLE %s WITH LOGIN PASSWORD %s", verb, quoteIdent(u.Name), quoteLiteral(u.Verifier))
		if u.Options != "" {
			stmt += " " + u.Options
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("user %s: %w", u.Name, err)
		}
		for _, db := range u.Databases {
			var dbExists bool
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, db).Scan(&dbExists); err != nil {
				return err
			}
			if !dbExists {
				if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", quoteIdent(db), quoteIdent(u.Name))); err != nil {
					return fmt.Errorf("database %s of user %s: %w", db, u.Name, err)
				}
			}
		}
	}
	return nil
}
