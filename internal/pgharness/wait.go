package pgharness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// WaitFor polls cond until it holds; what is the last reason it did not.
func (c *Cluster) WaitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	c.T.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			c.T.Fatalf("%s: not within %s: %s", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitHealthy waits until an instance holds the Lease and serves as primary
// and every other instance streams from it; it returns the primary.
func (c *Cluster) WaitHealthy(timeout time.Duration) string {
	c.T.Helper()
	var primary string
	c.WaitFor(timeout, "every instance ready", func() (bool, string) {
		primary = c.Holder()
		if primary == "" {
			return false, "no lease holder"
		}
		for _, n := range c.Names {
			st, err := c.Status(n)
			if err != nil {
				return false, n + ": " + err.Error()
			}
			want := pgcontract.RoleReplica
			if n == primary {
				want = pgcontract.RolePrimary
			}
			if !st.Ready || st.Role != want {
				return false, fmt.Sprintf("%s: role %q ready %v state %s %s", n, st.Role, st.Ready, st.State, st.Reason)
			}
			if n == primary {
				streaming := 0
				for _, r := range st.Replicas {
					if r.State == "streaming" {
						streaming++
					}
				}
				if streaming != len(c.Names)-1 {
					return false, fmt.Sprintf("the primary streams to %d replicas: %+v", streaming, st.Replicas)
				}
			}
		}
		return true, ""
	})
	return primary
}

// WaitNewPrimary waits until an instance other than old holds the Lease and
// serves as primary (having carried out switchover trigger, when not empty).
func (c *Cluster) WaitNewPrimary(old, what, trigger string) {
	c.T.Helper()
	c.WaitFor(60*time.Second, what, func() (bool, string) {
		h := c.Holder()
		if h == old || h == "" {
			return false, "lease holder " + h
		}
		st, err := c.Status(h)
		if err != nil {
			return false, err.Error()
		}
		return st.Role == pgcontract.RolePrimary && st.Ready && (trigger == "" || st.LastSwitchoverTrigger == trigger), st.State + " " + st.Reason
	})
}

// Connect opens a connection to connString, trying again until one succeeds
// or a minute has passed: on a busy machine one connect can outlast its
// connect_timeout (the SCRAM exchange included), which is not what a test
// asserts. Close the connection when done.
func (c *Cluster) Connect(connString string) *pgx.Conn {
	c.T.Helper()
	var conn *pgx.Conn
	c.WaitFor(time.Minute, "a connection ("+redactPassword(connString)+")", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if conn, err = pgx.Connect(ctx, connString); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return conn
}

// redactPassword hides the password of a keyword/value connection string.
func redactPassword(connString string) string {
	fields := strings.Fields(connString)
	for i, f := range fields {
		if strings.HasPrefix(f, "password=") {
			fields[i] = "password=<redacted>"
		}
	}
	return strings.Join(fields, " ")
}
