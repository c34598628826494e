package pgharness

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// UpgradeResult is how a major upgrade went, as the primary reported it.
type UpgradeResult struct {
	Step  string
	Error string
	// Downtime is the primary's: from its shutdown to the new major
	// accepting writes. Total runs from the config change to every
	// instance streaming on the new major (or to the failure's report).
	Downtime, Total time.Duration
	// Report compares the writers' logs with the table afterwards.
	Report pgwriter.Report
}

// MajorUpgrade asks the instances to upgrade to major to, as the controller
// does (a new generation of the config with MajorUpgrade), and waits until
// the primary reports the end: on Upgraded, until every instance is ready
// on the new major; on a failure, until the cluster is whole again. With
// writers running, their logs are checked against the table. Each watch
// sees every status the primary reports until the end (a fault is injected
// at a step).
func (c *Cluster) MajorUpgrade(to int, timeout time.Duration, watch ...func(primary pgcontract.Status)) UpgradeResult {
	c.T.Helper()
	primary := c.Holder()
	start := time.Now()
	c.Cfg.Generation++
	c.Cfg.MajorUpgrade = &pgcontract.MajorUpgrade{From: c.Cfg.PostgresVersion, To: to, Token: strconv.FormatInt(c.Cfg.Generation, 10)}
	c.Cfg.PostgresVersion = to
	c.WriteConfig()
	var res UpgradeResult
	c.WaitFor(timeout, "the primary's report of the upgrade to "+strconv.Itoa(to), func() (bool, string) {
		st, err := c.Status(primary)
		if err != nil {
			return false, err.Error()
		}
		for _, w := range watch {
			w(st)
		}
		u := st.MajorUpgrade
		if u == nil || u.Token != c.Cfg.MajorUpgrade.Token {
			return false, "no report yet: " + st.State + " " + st.Reason
		}
		res.Step, res.Error, res.Downtime = u.Step, u.Error, u.Downtime.Duration
		switch u.Step {
		case pgcontract.UpgradeUpgraded, pgcontract.UpgradeFailed, pgcontract.UpgradeCheckFailed:
			return true, ""
		}
		return false, u.Step
	})
	if res.Step != pgcontract.UpgradeUpgraded {
		// The old major runs on: the cluster as it was.
		c.Cfg.PostgresVersion = c.Cfg.MajorUpgrade.From
	}
	c.WaitFor(timeout, "every instance ready on PostgreSQL "+strconv.Itoa(c.Cfg.PostgresVersion), func() (bool, string) {
		var wrong []string
		for _, n := range c.Names {
			st, err := c.Status(n)
			if err != nil || !st.Ready || !strings.HasPrefix(st.PostgresVersion, strconv.Itoa(c.Cfg.PostgresVersion)+".") {
				wrong = append(wrong, fmt.Sprintf("%s: ready %v, %q, %s %s (%v)", n, st.Ready, st.PostgresVersion, st.State, st.Reason, err))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
	c.WaitHealthy(timeout)
	res.Total = time.Since(start)
	if c.writer != nil {
		res.Report = c.check(start)
	}
	return res
}
