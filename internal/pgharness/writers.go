package pgharness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// writers are the cluster's writers: one through every instance's address
// (as an application through the -primary Service), and those started on
// one instance's side of a network cut.
type writers struct {
	main     *pgwriter.Writer
	stranded []*pgwriter.Writer
	mu       sync.Mutex
	// stops stop the main writer (first) and the stranded ones running.
	stops []func()
}

// strandedIDs apart: each stranded writer's ids start a block of their own.
const strandedIDs = 1_000_000_000

// StartWriter creates the table and starts the writer, and waits for its
// first acknowledged write.
func (c *Cluster) StartWriter() { c.StartWriterThrough(c.ConnString(), 0) }

// StartWriterThrough is StartWriter with the writer connecting through
// connString (a pooler), each connect and write bounded by timeout (the
// writer's default when 0).
func (c *Cluster) StartWriterThrough(connString string, timeout time.Duration) {
	c.T.Helper()
	c.must(pgwriter.Prepare(context.Background(), connString))
	c.writer = &writers{main: &pgwriter.Writer{ConnString: connString, Interval: 20 * time.Millisecond, Timeout: timeout}}
	c.writer.start(c.writer.main)
	c.WaitFor(30*time.Second, "the writer's first acknowledged write", func() (bool, string) {
		return pgwriter.CountAcked(c.writer.main.Records()) > 0, lastErr(c.writer.main.Records())
	})
}

func (ws *writers) start(w *pgwriter.Writer) {
	stop := w.Start(context.Background())
	ws.mu.Lock()
	ws.stops = append(ws.stops, stop)
	ws.mu.Unlock()
}

// startStranded starts a writer that reaches instance name alone, through
// its Unix socket: it keeps writing to a primary cut off from the network,
// as a client on the same side of the cut would.
func (c *Cluster) startStranded(name string) {
	ws := c.writer
	ws.mu.Lock()
	w := &pgwriter.Writer{ConnString: c.socketConnString(name), Interval: 20 * time.Millisecond,
		FirstID: int64(len(ws.stranded)+1) * strandedIDs}
	ws.stranded = append(ws.stranded, w)
	ws.mu.Unlock()
	ws.start(w)
}

// StopWriters stops every writer (their logs stay).
func (c *Cluster) StopWriters() { c.stopWriters(0) }

// stopStranded stops the stranded writers, not the main one.
func (c *Cluster) stopStranded() { c.stopWriters(1) }

func (c *Cluster) stopWriters(keep int) {
	if c.writer == nil {
		return
	}
	c.writer.mu.Lock()
	stops := c.writer.stops[min(keep, len(c.writer.stops)):]
	c.writer.stops = c.writer.stops[:min(keep, len(c.writer.stops))]
	c.writer.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// Records are the logs of every writer so far, the main writer's first.
func (c *Cluster) Records() []pgwriter.Record {
	rs := c.writer.main.Records()
	c.writer.mu.Lock()
	stranded := c.writer.stranded
	c.writer.mu.Unlock()
	for _, w := range stranded {
		rs = append(rs, w.Records()...)
	}
	return rs
}

func lastErr(rs []pgwriter.Record) string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Err != "" {
			return rs[i].Outcome.String() + ": " + rs[i].Err
		}
	}
	return "no error"
}

// check waits for a write the current primary acknowledged after since,
// then compares every writer's log with the table.
func (c *Cluster) check(since time.Time) pgwriter.Report {
	c.T.Helper()
	primary := c.Holder()
	c.WaitFor(30*time.Second, "a write acknowledged after recovery", func() (bool, string) {
		rs := c.writer.main.Records()
		for i := len(rs) - 1; i >= 0 && rs[i].Start.After(since); i-- {
			if rs[i].Outcome == pgwriter.Acked && rs[i].Server == c.Insts[primary].Host.IP {
				return true, ""
			}
		}
		return false, lastErr(rs)
	})
	records := c.Records()
	// The check reads the table from whichever instance is primary; a busy
	// machine can make one connect time out, so it is tried until it reads.
	var rep pgwriter.Report
	c.WaitFor(60*time.Second, "the table read for the check", func() (bool, string) {
		r, err := pgwriter.Check(context.Background(), c.ConnString(), records)
		if err != nil {
			return false, err.Error()
		}
		rep = r
		return true, ""
	})
	return rep
}

// Problems are what a user would call data loss or split brain in rep and
// failovers.
func Problems(rep pgwriter.Report, failovers []pgwriter.Failover) []string {
	var out []string
	if len(rep.Lost) > 0 {
		out = append(out, fmt.Sprintf("%d acknowledged writes lost: ids %v", len(rep.Lost), rep.Lost))
	}
	if len(rep.Phantom) > 0 {
		out = append(out, fmt.Sprintf("%d writes that failed before reaching a server are in the table: ids %v", len(rep.Phantom), rep.Phantom))
	}
	for _, f := range failovers {
		if len(f.SplitBrain) > 0 {
			out = append(out, fmt.Sprintf("split brain: writes %v acknowledged on timeline %d after the first on %d", f.SplitBrain, f.OldTimeline, f.NewTimeline))
		}
	}
	return out
}
