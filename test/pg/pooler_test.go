package pg

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// A planned switchover through a real PgBouncer (`lookout pgbouncer`, in a
// network namespace of its own, as a pod of the pooler Deployment): pgbench
// and the id-tagged writer run through the pooler while the primary hands
// over. The old primary pauses the pooler, checkpoints and shuts down, the
// target promotes and resumes the pooler, which now points at it. The
// clients see a pause and no error: pgbench reports 0 failed transactions
// and no aborted client, every write of the writer is acknowledged, and
// every acknowledged write is in the table.
func TestSwitchoverThroughThePoolerFailsNoTransaction(t *testing.T) {
	c := newCluster(t, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		SynchronousMode: true, SynchronousModeStrict: true, SynchronousNodeCount: 1,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}}, pgharness.WithPoolers)
	primary := c.WaitHealthy(3 * time.Minute)
	pooler := c.StartPooler("pg-pgbouncer-0")

	// pgbench's tables, made on the primary; its transactions go through
	// the pooler.
	pgbench := filepath.Join(env.BinDir, "pgbench")
	initCmd := exec.Command(pgbench, "-i", "-s", "1", "-q", "-h", c.Insts[primary].Host.IP, "-p", "5432", "-U", c.User, "app")
	initCmd.Env = append(os.Environ(), "PGPASSWORD="+c.Password, "PGSSLMODE=disable")
	if out, err := initCmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	c.StartWriterThrough(c.PoolerConnString(pooler), 30*time.Second)

	// A steady load, not a CPU hog: 4 clients, 100 transactions a second.
	var out lockedBuffer
	bench := exec.Command(pgbench, "-n", "-c", "4", "-j", "2", "-R", "100", "-T", "60", "-P", "5",
		"-h", pooler.Host.IP, "-p", strconv.Itoa(pgharness.PoolerPort), "-U", c.User, "app")
	bench.Env = append(os.Environ(), "PGPASSWORD="+c.Password, "PGSSLMODE=disable")
	bench.Stdout, bench.Stderr = &out, &out
	must(t, bench.Start())
	done := make(chan error, 1)
	go func() { done <- bench.Wait() }()
	t.Cleanup(func() {
		_ = bench.Process.Kill()
		<-done
	})
	c.WaitFor(time.Minute, "pgbench's first progress report", func() (bool, string) {
		return bytes.Contains([]byte(out.String()), []byte("progress:")), ""
	})

	var switchover pgharness.Fault
	for _, f := range pgharness.Faults(0) {
		if f.Key == pgharness.FaultSwitchover {
			switchover = f
		}
	}
	r := c.RunFault(switchover)
	switched := time.Now()
	t.Logf("%s → %s, every instance ready %s after the switchover; writes: %s",
		r.OldPrimary, r.NewPrimary, r.FullStrength.Round(time.Millisecond), r.Report)
	for _, p := range r.Problems {
		t.Error(p)
	}
	if len(r.Failovers) != 1 {
		t.Fatalf("the writer saw %d changes of timeline, want 1", len(r.Failovers))
	}
	fo := r.Failovers[0]
	t.Logf("write pause through the pooler: %s (last write on timeline %d → first on %d)",
		fo.Duration().Round(time.Millisecond), fo.OldTimeline, fo.NewTimeline)
	if r.Report.Failed > 0 || r.Report.Unknown > 0 {
		t.Errorf("writes through the pooler that were not acknowledged: %s; last error: %s", r.Report, lastError(c.Records()))
	}

	var benchErr error
	c.WaitFor(2*time.Minute, "pgbench to finish", func() (bool, string) {
		select {
		case benchErr = <-done:
			done <- benchErr
			return true, ""
		default:
			return false, ""
		}
	})
	ended := time.Now()
	t.Logf("pgbench through the pooler:\n%s", tailOf(out.String(), 14))
	if benchErr != nil {
		t.Errorf("pgbench: %v (an aborted client is a failed transaction at the client)", benchErr)
	}
	if ended.Before(fo.FirstNew) || switched.After(ended.Add(time.Minute)) {
		t.Errorf("pgbench did not run across the switchover")
	}
	failed := regexp.MustCompile(`number of failed transactions: (\d+)`).FindStringSubmatch(out.String())
	processed := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindStringSubmatch(out.String())
	if failed == nil || processed == nil {
		t.Fatalf("pgbench printed no summary")
	}
	if failed[1] != "0" {
		t.Errorf("pgbench: %s failed transactions, want 0", failed[1])
	}
	if n, _ := strconv.Atoi(processed[1]); n == 0 {
		t.Errorf("pgbench processed no transaction")
	}
}

// lockedBuffer is pgbench's output, read while it writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func lastError(rs []pgwriter.Record) string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Err != "" {
			return fmt.Sprintf("id %d: %s", rs[i].ID, rs[i].Err)
		}
	}
	return ""
}

func tailOf(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
