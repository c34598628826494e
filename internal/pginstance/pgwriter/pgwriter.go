// Package pgwriter is a client that writes rows with ids of its own through
// whichever PostgreSQL instance accepts writes, and logs the outcome of each:
// acknowledged (the commit returned), failed (the row was certainly not
// written: no connection) or unknown (the connection died while the commit
// was in flight). Comparing the log with the table after a fault is the
// check that no acknowledged write was lost (a Jepsen-style set check).
package pgwriter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Outcome of one write.
type Outcome int

const (
	Acked Outcome = iota
	Failed
	Unknown
)

func (o Outcome) String() string { return [...]string{"acked", "failed", "unknown"}[o] }

// Record is one write.
type Record struct {
	ID      int64
	Outcome Outcome
	// Start and End bound the attempt; End is when the outcome was known.
	Start, End time.Time
	// Timeline and Server are the primary's, for acknowledged writes
	// (Server is "local" through a Unix socket).
	Timeline int
	Server   string
	Err      string
}

// Table is the table the writer fills.
const Table = "lookout_writes"

// Writer writes one row at a time, every Interval, through ConnString (a
// libpq connection string; several hosts with target_session_attrs=read-write
// find the primary).
type Writer struct {
	ConnString string
	Interval   time.Duration
	// Timeout bounds each connect and each write; a commit that waits
	// longer for a synchronous standby is unknown.
	Timeout time.Duration
	// FirstID: the ids written are FirstID+1, FirstID+2, ... (several
	// writers into one table take blocks of their own).
	FirstID int64
	// Lookup, when set, resolves the host names of ConnString at each
	// connect, as cluster DNS resolves a Service's name (e.g. to the
	// endpoints of a <cluster>-primary Service).
	Lookup pgconn.LookupFunc

	mu      sync.Mutex
	records []Record
	next    int64
}

// Prepare creates the table.
func Prepare(ctx context.Context, connString string) error {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+Table+` (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	return err
}

// Start runs the writer in the background until stop is called or ctx ends; stop
// returns once the writer has ended, and may be called more than once.
func (w *Writer) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// Run writes until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	if w.Interval == 0 {
		w.Interval = 10 * time.Millisecond
	}
	if w.Timeout == 0 {
		w.Timeout = 2 * time.Second
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	w.mu.Lock()
	w.next = max(w.next, w.FirstID)
	w.mu.Unlock()
	tick := time.NewTicker(w.Interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		w.mu.Lock()
		w.next++
		r := Record{ID: w.next, Start: time.Now()}
		w.mu.Unlock()
		// Connecting and writing have a Timeout each: a connect that spends
		// most of it on a host that does not answer (a stopped primary
		// first in the list) must not leave the write too little time.
		if conn == nil || conn.IsClosed() {
			cctx, cancel := context.WithTimeout(ctx, w.Timeout)
			c, err := w.connect(cctx)
			cancel()
			if err != nil {
				r.Outcome, r.Err = Failed, err.Error()
			} else {
				conn = c
			}
		}
		wctx, cancel := context.WithTimeout(ctx, w.Timeout)
		if r.Err == "" {
			err := conn.QueryRow(wctx, `INSERT INTO `+Table+` (id) VALUES ($1)
				RETURNING ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int, coalesce(host(inet_server_addr()), 'local')`,
				r.ID).Scan(&r.Timeline, &r.Server)
			switch {
			case err == nil:
				r.Outcome = Acked
			case pgconn.SafeToRetry(err):
				r.Outcome, r.Err = Failed, err.Error()
			default:
				var pgErr *pgconn.PgError
				// A connection exception (class 08) comes from a pooler
				// whose server connection broke: the statement may have
				// committed.
				if errors.As(err, &pgErr) && pgErr.SQLState() != "57P01" && pgErr.SQLState() != "40001" && !strings.HasPrefix(pgErr.SQLState(), "08") {
					// The server refused the statement (read-only, ...):
					// the transaction rolled back.
					r.Outcome = Failed
				} else {
					r.Outcome = Unknown
				}
				r.Err = err.Error()
				conn.Close(context.Background())
			}
		}
		cancel()
		if ctx.Err() != nil && r.Outcome != Acked {
			r.Outcome = Unknown // cut short by the end of the run
		}
		r.End = time.Now()
		w.mu.Lock()
		w.records = append(w.records, r)
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func (w *Writer) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(w.ConnString)
	if err != nil {
		return nil, err
	}
	if w.Lookup != nil {
		cfg.LookupFunc = w.Lookup
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Records is a copy of the log so far.
func (w *Writer) Records() []Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.records)
}

// CountAcked counts acknowledged writes.
func CountAcked(records []Record) int {
	n := 0
	for _, r := range records {
		if r.Outcome == Acked {
			n++
		}
	}
	return n
}

// Report is what a comparison of the log with the table found.
type Report struct {
	Acked, Failed, Unknown int
	// Lost are acknowledged ids missing from the table: must be empty.
	Lost []int64
	// Phantom are failed ids found in the table: must be empty too (a
	// failed write never reached a server).
	Phantom []int64
	// UnknownWritten is how many unknown writes did commit.
	UnknownWritten int
}

// Check compares records with the table read through connString.
func Check(ctx context.Context, connString string, records []Record) (Report, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return Report{}, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id FROM `+Table)
	if err != nil {
		return Report{}, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return Report{}, err
	}
	have := make(map[int64]bool, len(ids))
	for _, id := range ids {
		have[id] = true
	}
	var rep Report
	for _, r := range records {
		switch r.Outcome {
		case Acked:
			rep.Acked++
			if !have[r.ID] {
				rep.Lost = append(rep.Lost, r.ID)
			}
		case Failed:
			rep.Failed++
			if have[r.ID] {
				rep.Phantom = append(rep.Phantom, r.ID)
			}
		case Unknown:
			rep.Unknown++
			if have[r.ID] {
				rep.UnknownWritten++
			}
		}
	}
	return rep, nil
}

func (r Report) String() string {
	return fmt.Sprintf("%d acknowledged (%d lost), %d failed (%d written anyway), %d unknown (%d written)",
		r.Acked, len(r.Lost), r.Failed, len(r.Phantom), r.Unknown, r.UnknownWritten)
}

// Failover is what the log says about one change of primary: the gap
// between the last acknowledged write on the old timeline and the first on
// the new, and whether any write was acknowledged on the old timeline after
// the first on the new (split brain).
type Failover struct {
	OldTimeline, NewTimeline int
	LastOld, FirstNew        time.Time
	SplitBrain               []int64
}

func (f Failover) Duration() time.Duration { return f.FirstNew.Sub(f.LastOld) }

// Failovers lists the timeline changes in records.
func Failovers(records []Record) []Failover {
	var acked []Record
	for _, r := range records {
		if r.Outcome == Acked {
			acked = append(acked, r)
		}
	}
	slices.SortFunc(acked, func(a, b Record) int { return a.End.Compare(b.End) })
	var out []Failover
	for i := 1; i < len(acked); i++ {
		prev, cur := acked[i-1], acked[i]
		if cur.Timeline <= prev.Timeline {
			continue
		}
		f := Failover{OldTimeline: prev.Timeline, NewTimeline: cur.Timeline, LastOld: prev.End, FirstNew: cur.End}
		for _, later := range acked[i:] {
			if later.Timeline < cur.Timeline {
				f.SplitBrain = append(f.SplitBrain, later.ID)
			}
		}
		out = append(out, f)
	}
	return out
}
