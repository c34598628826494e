package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// ruleFunc makes one alerting rule of the cluster's PrometheusRule.
type ruleFunc func(name, expr, forDur string, labels map[string]string, summary string) monitoringv1.Rule

// backupAlerts alert when the primary's WAL archiving fails (its last
// failure is newer than its last success) and when the last full backup of
// a repository with a full schedule is older than the schedule allows
// (half as long again as the longest gap the schedule's shape allows).
func backupAlerts(c *postgresv1beta1.PostgresCluster, sel string, alert ruleFunc) []monitoringv1.Rule {
	if c.Spec.Backups == nil {
		return nil
	}
	failed := fmt.Sprintf("%s{%s}", pgcontract.MetricArchiveLastFailed, sel)
	archived := fmt.Sprintf("%s{%s}", pgcontract.MetricArchiveLastArchived, sel)
	primary := fmt.Sprintf("%s{role=%q,%s} == 1", pgcontract.MetricRole, pgcontract.RolePrimary, sel)
	// Every alert names its cluster and namespace: the expressions match
	// on (namespace, pod) or aggregate, which drops the cluster label, and
	// an AlertmanagerConfig routes the alerts of its own namespace only.
	labels := func(severity string) map[string]string {
		return map[string]string{"severity": severity, "namespace": c.Namespace, LabelClusterTarget: c.Name}
	}
	out := []monitoringv1.Rule{alert("PostgresArchivingFailing",
		fmt.Sprintf(`((%s > on(namespace, pod) %s) or (%s unless on(namespace, pod) %s)) and on(namespace, pod) (%s)`, failed, archived, failed, archived, primary),
		"5m", labels("critical"),
		"WAL archiving to the backup repositories fails: point-in-time recovery stops at the last archived segment and pg_wal grows")}
	for _, r := range c.Spec.Backups.PGBackRest.Repos {
		if r.BackupSchedules == nil || r.BackupSchedules.Full == nil {
			continue
		}
		gap, ok := scheduleGap(*r.BackupSchedules.Full)
		if !ok {
			continue
		}
		limit := gap + gap/2
		out = append(out, alert("PostgresNoRecentFullBackup",
			fmt.Sprintf(`time() - max(%s{%s,repo=%q,type=%q}) > %d`, pgcontract.MetricBackupLast, sel, r.Name, pgcontract.BackupFull, int64(limit.Seconds())),
			"10m", labels("warning"),
			fmt.Sprintf("no full backup of %s is newer than %s, which its schedule %q allows", r.Name, limit, *r.BackupSchedules.Full)))
	}
	return out
}

// scheduleGap is the longest time between two runs of a cron schedule's
// shape, rounded up to its calendar unit: a day of the month or a month
// named makes it a month or a year, a day of the week a week, an hour a
// day, every n hours n hours, else an hour.
func scheduleGap(s string) (time.Duration, bool) {
	const day = 24 * time.Hour
	switch strings.TrimSpace(s) {
	case "@hourly":
		return time.Hour, true
	case "@daily", "@midnight":
		return day, true
	case "@weekly":
		return 7 * day, true
	case "@monthly":
		return 31 * day, true
	case "@yearly", "@annually":
		return 366 * day, true
	}
	f := strings.Fields(s)
	if len(f) != 5 {
		return 0, false
	}
	hour, dom, month, dow := f[1], f[2], f[3], f[4]
	switch {
	case month != "*":
		return 366 * day, true
	case dom != "*":
		return 31 * day, true
	case dow != "*":
		return 7 * day, true
	case hour == "*":
		return time.Hour, true
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(hour, "*/")); err == nil && strings.HasPrefix(hour, "*/") && n > 0 {
		return time.Duration(n) * time.Hour, true
	}
	return day, true
}
