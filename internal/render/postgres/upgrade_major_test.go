package postgres_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// withSeventeen is in with PostgreSQL 17 installed besides 15; its
// parameters are 15's here (the gate does not look at them; test/pge2e
// runs the real 17).
func withSeventeen(in *pg.Inputs) *pg.Inputs {
	params := maps.Clone(in.Installation.Parameters)
	params[17] = params[15]
	in.Installation = pg.Installation{Parameters: params}
	return in
}

// upgrading is hippo running 15 (as its status says) with spec.postgresVersion
// 17 and the allow-upgrade annotation set to allow (none when empty).
func upgrading(allow string, opts ...func(*postgresv1beta1.PostgresCluster)) *postgresv1beta1.PostgresCluster {
	return hippo(append([]func(*postgresv1beta1.PostgresCluster){func(c *postgresv1beta1.PostgresCluster) {
		c.Spec.PostgresVersion = 17
		c.Status.PostgresVersion = 15
		if allow != "" {
			c.Annotations = map[string]string{pgcontract.AnnotationAllowUpgrade: allow}
		}
	}}, opts...)...)
}

func statefulSets(objs []workload.Object) []*appsv1.StatefulSet {
	var out []*appsv1.StatefulSet
	for _, o := range objs {
		if s, ok := o.(*appsv1.StatefulSet); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestAMajorVersionChangeIsRefusedUnlessAllowedByName(t *testing.T) {
	for _, tc := range []struct {
		name, reason, contains string
		cluster                *postgresv1beta1.PostgresCluster
	}{
		{"without the annotation", pg.ReasonMajorUpgradeNotAllowed,
			`PostgreSQL 15 → 17 is a major upgrade (pg_upgrade, with downtime): annotate the cluster postgres-operator.crunchydata.com/allow-upgrade="17" to run it (it is not set); nothing was changed`,
			upgrading("")},
		{"with the annotation naming another major", pg.ReasonMajorUpgradeNotAllowed, `(it names "16")`, upgrading("16")},
		{"downwards", pg.ReasonMajorDowngrade, "the cluster runs PostgreSQL 17: a major version cannot be downgraded in place", hippo(func(c *postgresv1beta1.PostgresCluster) {
			c.Status.PostgresVersion = 17
			c.Annotations = map[string]string{pgcontract.AnnotationAllowUpgrade: "15"}
		})},
		{"with backups (pgBackRest 2.45 has no 17)", pg.ReasonMajorUpgradeBackups, "pgBackRest 2.45 (the instance image's) does not support PostgreSQL 17", upgrading("17", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups = s3Backups()
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := pg.Render(withSeventeen(inputs(t, tc.cluster, 1)))
			var se *workload.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, %v; want a SpecError", d, err)
			}
			if se.Reason != tc.reason || !strings.Contains(se.Message, tc.contains) || se.Field == "" {
				t.Errorf("got %s (%s): %s\nwant %s containing %q", se.Reason, se.Field, se.Message, tc.reason, tc.contains)
			}
		})
	}
}

// An allowed upgrade is asked of the instances through their config; the
// pods stay as they are (same template, the old major's --pgdata: the
// instance managers follow the upgrade on the volume), so none restarts.
func TestAnAllowedMajorUpgradeAsksTheInstancesAndKeepsThePods(t *testing.T) {
	before := render(t, withSeventeen(inputs(t, hippo(), 1)))
	if before.Config.MajorUpgrade != nil {
		t.Fatalf("a cluster at its major is asked to upgrade: %+v", before.Config.MajorUpgrade)
	}
	in := withSeventeen(inputs(t, upgrading("17"), 1))
	in.StatefulSets = statefulSets(before.Objects)
	after := render(t, in)
	if want := (pgcontract.MajorUpgrade{From: 15, To: 17, Token: "3"}); after.Config.MajorUpgrade == nil || *after.Config.MajorUpgrade != want {
		t.Errorf("config asks %+v, want %+v", after.Config.MajorUpgrade, want)
	}
	old, now := statefulSets(before.Objects), statefulSets(after.Objects)
	if len(old) != 3 || len(now) != 3 {
		t.Fatalf("%d and %d StatefulSets, want 3", len(old), len(now))
	}
	for i := range now {
		a, b := old[i].Spec.Template.Spec.Containers[0].Args, now[i].Spec.Template.Spec.Containers[0].Args
		if !slices.Equal(a, b) || !slices.Contains(b, "--pgdata=/pgdata/pg15") {
			t.Errorf("%s: arguments %v became %v; want them kept, with --pgdata=/pgdata/pg15", now[i].Name, a, b)
		}
	}

	fresh := render(t, withSeventeen(inputs(t, hippo(func(c *postgresv1beta1.PostgresCluster) { c.Spec.PostgresVersion = 17 }), 1)))
	if args := statefulSets(fresh.Objects)[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--pgdata=/pgdata/pg17") || fresh.Config.MajorUpgrade != nil {
		t.Errorf("a new cluster at 17: arguments %v, upgrade %+v; want --pgdata=/pgdata/pg17 and none", args, fresh.Config.MajorUpgrade)
	}
}

// The status follows the primary's report: the downtime once it runs the
// new major, Complete once every instance does, and a failure as False
// with what failed.
func TestMajorUpgradeStatusAndCondition(t *testing.T) {
	started := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	finished := started.Add(20 * time.Second)
	report := func(step, errMsg string) *pgcontract.MajorUpgradeStatus {
		return &pgcontract.MajorUpgradeStatus{Token: "3", From: 15, To: 17, Step: step, Error: errMsg, Started: &started, Finished: &finished,
			Downtime: pgcontract.Duration{Duration: 4200 * time.Millisecond}}
	}
	c := upgrading("17")
	obs := pg.Observed{Instances: map[string]*pgcontract.Status{
		"hippo-a": {Role: pgcontract.RolePrimary, Ready: true, PostgresVersion: "17.12 (Debian 17.12-0+deb13u1)", MajorUpgrade: report(pgcontract.UpgradeUpgraded, "")},
		"hippo-b": {Role: pgcontract.RoleReplica, Ready: true, PostgresVersion: "17.12 (Debian 17.12-0+deb13u1)"},
		"hippo-c": {Role: "", State: "Cloning"},
	}}
	pg.ObservedStatus(c, obs, &c.Status)
	u := c.Status.MajorUpgrade
	if u == nil || u.Step != pgcontract.UpgradeUpgraded || u.Downtime != "4.2s" || u.Message != "cloning the new primary: hippo-c" || c.Status.PostgresVersion != 17 {
		t.Fatalf("status %+v (postgresVersion %d), want Upgraded, downtime 4.2s, hippo-c cloning, 17", u, c.Status.PostgresVersion)
	}
	if cond := pg.MajorUpgradeCondition(c); cond.Status != "Unknown" || cond.Reason != "Upgraded" {
		t.Errorf("condition %+v, want Unknown/Upgraded while a replica clones", cond)
	}

	obs.Instances["hippo-c"] = &pgcontract.Status{Role: pgcontract.RoleReplica, Ready: true, PostgresVersion: "17.12"}
	pg.ObservedStatus(c, obs, &c.Status)
	cond := pg.MajorUpgradeCondition(c)
	if c.Status.MajorUpgrade.Step != pg.StepComplete || cond.Status != "True" || cond.Message != "every instance runs PostgreSQL 17; downtime 4.2s" {
		t.Errorf("status %+v, condition %+v; want Complete, True, with the downtime", c.Status.MajorUpgrade, cond)
	}

	failed := upgrading("17")
	obs = pg.Observed{Instances: map[string]*pgcontract.Status{
		"hippo-a": {Role: pgcontract.RolePrimary, Ready: true, PostgresVersion: "15.18", MajorUpgrade: report(pgcontract.UpgradeCheckFailed, "pg_upgrade: Your installation contains one of the reg* data types in user tables.")},
	}}
	pg.ObservedStatus(failed, obs, &failed.Status)
	cond = pg.MajorUpgradeCondition(failed)
	if cond.Status != "False" || cond.Reason != "CheckFailed" || !strings.Contains(cond.Message, "PostgreSQL 15 runs on: pg_upgrade: Your installation contains one of the reg* data types") || failed.Status.PostgresVersion != 15 {
		t.Errorf("condition %+v (postgresVersion %d); want False/CheckFailed saying 15 runs on and why", cond, failed.Status.PostgresVersion)
	}
}
