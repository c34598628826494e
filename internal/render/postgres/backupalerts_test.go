package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/promqltest"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
)

// ruleExpr is the expression of alert in the cluster's rendered
// PrometheusRule.
func ruleExpr(t *testing.T, c *postgresv1beta1.PostgresCluster, alert string) string {
	t.Helper()
	for _, o := range render(t, inputs(t, c, 1)).Objects {
		pr, ok := o.(*monitoringv1.PrometheusRule)
		if !ok {
			continue
		}
		for _, r := range pr.Spec.Groups[0].Rules {
			if r.Alert == alert {
				return r.Expr.String()
			}
		}
	}
	t.Fatalf("the PrometheusRule has no alert %s", alert)
	return ""
}

const sel = `namespace="zoo",cluster="hippo"`

// The backup alerts, evaluated by Prometheus's own PromQL test engine on
// the expressions the cluster's PrometheusRule ships: each fires when it
// should and stays quiet otherwise (an empty count).
func TestTheBackupAlertsFireAndStayQuiet(t *testing.T) {
	c := hippo(withBackups) // full backups weekly: the limit is 10.5 days
	archiving := ruleExpr(t, c, "PostgresArchivingFailing")
	noFull := ruleExpr(t, c, "PostgresNoRecentFullBackup")
	primary := `lookout_pg_role{` + sel + `,pod="p0",role="master"} 1x30`
	for _, tc := range []struct {
		name, expr, at string
		series         []string
		fires          bool
	}{
		{"archiving failed after its last success on the primary", archiving, "20m", []string{primary,
			`lookout_pg_archive_last_failed_timestamp_seconds{` + sel + `,pod="p0"} 660x30`,
			`lookout_pg_archive_last_archived_timestamp_seconds{` + sel + `,pod="p0"} 300x30`}, true},
		{"archiving failed and never succeeded", archiving, "20m", []string{primary,
			`lookout_pg_archive_last_failed_timestamp_seconds{` + sel + `,pod="p0"} 660x30`}, true},
		{"archiving succeeded after its last failure", archiving, "20m", []string{primary,
			`lookout_pg_archive_last_failed_timestamp_seconds{` + sel + `,pod="p0"} 300x30`,
			`lookout_pg_archive_last_archived_timestamp_seconds{` + sel + `,pod="p0"} 660x30`}, false},
		{"a replica's archiver remembers a failure from when it was primary", archiving, "20m", []string{primary,
			`lookout_pg_role{` + sel + `,pod="p1",role="replica"} 1x30`,
			`lookout_pg_archive_last_failed_timestamp_seconds{` + sel + `,pod="p1"} 660x30`,
			`lookout_pg_archive_last_archived_timestamp_seconds{` + sel + `,pod="p1"} 300x30`}, false},
		{"the last full backup is 12 days old", noFull, "288h", []string{
			`lookout_pg_backup_last_completion_timestamp_seconds{` + sel + `,pod="p0",repo="repo1",type="full"} 0x300`}, true},
		{"the last full backup is 2 days old", noFull, "288h", []string{
			`lookout_pg_backup_last_completion_timestamp_seconds{` + sel + `,pod="p0",repo="repo1",type="full"} 864000x300`}, false},
		{"only a differential backup is 12 days old", noFull, "288h", []string{
			`lookout_pg_backup_last_completion_timestamp_seconds{` + sel + `,pod="p0",repo="repo1",type="diff"} 0x300`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := "1m"
			if strings.HasSuffix(tc.at, "h") {
				step = "1h"
			}
			script := "load " + step + "\n  " + strings.Join(tc.series, "\n  ") + "\n\n" +
				fmt.Sprintf("eval instant at %s count(%s)\n", tc.at, tc.expr)
			if tc.fires {
				script += "  {} 1\n"
			}
			promqltest.RunTest(t, script, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
		})
	}
}

func TestScheduleGapIsTheLongestGapTheScheduleAllows(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		schedule string
		gap      time.Duration
	}{
		{"0 1 * * 0", 7 * day}, {"0 1 * * 1-6", 7 * day}, {"30 2 * * *", day}, {"15 */6 * * *", 6 * time.Hour},
		{"*/10 * * * *", time.Hour}, {"0 3 1 * *", 31 * day}, {"0 0 1 1 *", 366 * day}, {"@daily", day}, {"@weekly", 7 * day},
	} {
		if got, ok := pg.ScheduleGap(tc.schedule); !ok || got != tc.gap {
			t.Errorf("%q: %s, want %s", tc.schedule, got, tc.gap)
		}
	}
}

// The archiving alert ships as it is documented: five minutes of failing
// archiving, critical, with the cluster's labels (test/pge2e evaluates a
// copy with a shorter `for`, so this is what pins the shipped one).
func TestTheArchivingAlertShipsWithFiveMinutes(t *testing.T) {
	for _, o := range render(t, inputs(t, hippo(withBackups), 1)).Objects {
		pr, ok := o.(*monitoringv1.PrometheusRule)
		if !ok {
			continue
		}
		for _, r := range pr.Spec.Groups[0].Rules {
			if r.Alert != "PostgresArchivingFailing" {
				continue
			}
			if r.For == nil || *r.For != "5m" || r.Labels["severity"] != "critical" || r.Labels["namespace"] != "zoo" || r.Labels["cluster"] != "hippo" {
				t.Errorf("PostgresArchivingFailing for %v, labels %v; want 5m, critical, zoo/hippo", r.For, r.Labels)
			}
			return
		}
	}
	t.Fatal("no PostgresArchivingFailing in the PrometheusRule")
}
