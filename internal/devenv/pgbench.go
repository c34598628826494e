package devenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Pgbench is a pgbench load of unknown length: back-to-back runs of Chunk
// each (pgbench prints its summary only for a run that ends on its own)
// until Stop, each run's summary added up. A run that exits with an error
// had a client aborted: a failed transaction at the client.
type Pgbench struct {
	// Path of the pgbench program; Args its options without -T (connection,
	// clients, rate, database); Env is added to the environment
	// (PGPASSWORD, PGSSLMODE).
	Path string
	Args []string
	Env  []string
	// Chunk is one run's length (default 10 s).
	Chunk time.Duration

	mu     sync.Mutex
	result PgbenchResult
	cancel context.CancelFunc
	done   chan struct{}
}

// PgbenchResult adds up the runs' summaries.
type PgbenchResult struct {
	Runs      int `json:"runs"`
	Processed int `json:"processed"`
	Failed    int `json:"failed"`
	// Errors are the runs that exited with an error or printed no summary,
	// with the end of their output.
	Errors []string `json:"errors,omitempty"`
}

func (r PgbenchResult) String() string {
	return fmt.Sprintf("%d runs, %d transactions processed, %d failed, %d runs with an error", r.Runs, r.Processed, r.Failed, len(r.Errors))
}

var (
	pgbenchProcessed = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
	pgbenchFailed    = regexp.MustCompile(`number of failed transactions: (\d+)`)
)

// Start runs the load in the background.
func (p *Pgbench) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	chunk := p.Chunk
	if chunk == 0 {
		chunk = 10 * time.Second
	}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			p.run(chunk)
		}
	}()
}

// run is one run; it is not cut short (a killed pgbench prints no summary).
func (p *Pgbench) run(chunk time.Duration) {
	args := append(append([]string{}, p.Args...), "-T", strconv.Itoa(int(chunk.Seconds())))
	cmd := exec.Command(p.Path, args...)
	cmd.Env = append(os.Environ(), p.Env...)
	out, err := cmd.CombinedOutput()
	processed := pgbenchProcessed.FindSubmatch(out)
	failed := pgbenchFailed.FindSubmatch(out)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.result.Runs++
	if processed != nil {
		n, _ := strconv.Atoi(string(processed[1]))
		p.result.Processed += n
	}
	if failed != nil {
		n, _ := strconv.Atoi(string(failed[1]))
		p.result.Failed += n
	}
	if err != nil || processed == nil || failed == nil {
		p.result.Errors = append(p.result.Errors, fmt.Sprintf("run %d: %v\n%s", p.result.Runs, err, LastBytes(out, 1500)))
	}
}

// Result is what the runs that ended so far add up to.
func (p *Pgbench) Result() PgbenchResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.result
	r.Errors = append([]string(nil), r.Errors...)
	return r
}

// Stop lets the current run end (up to Chunk) and returns the sum.
func (p *Pgbench) Stop() PgbenchResult {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
	return p.Result()
}
