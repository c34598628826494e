package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// renderPostgresClusters prints the objects of the PostgresClusters asked
// for (o.PostgresCluster: NAMESPACE/NAME, or all), as the controller renders
// them. Passwords, keys and instance names are those of the Secrets and
// StatefulSets in the input; what is missing is generated from a fixed seed,
// so the output is the same every time (the operator seeds from crypto/rand).
func renderPostgresClusters(ctx context.Context, c client.Reader, o RenderOptions, out, errOut io.Writer) error {
	var list postgresv1beta1.PostgresClusterList
	if err := c.List(ctx, &list); err != nil {
		return fmt.Errorf("list PostgresClusters: %w", err)
	}
	dirs := o.PostgresBinDirs
	if len(dirs) == 0 {
		dirs = pgcontract.DefaultBinDirGlobs
	}
	inst, _, err := gather.PostgresFor(ctx, dirs...)
	if err != nil {
		return err
	}
	g := &gather.Cluster{Cache: c, Live: c}
	found := 0
	for i := range list.Items {
		pc := &list.Items[i]
		if o.PostgresCluster != "all" && o.PostgresCluster != pc.Namespace+"/"+pc.Name {
			continue
		}
		found++
		res, err := g.PostgresCluster(ctx, pc)
		if err != nil {
			return err
		}
		res.Inputs.Installation = inst
		res.Inputs.Image = o.PostgresImage
		res.Inputs.RunAsUser = pgrender.DefaultRunAsUser
		res.Inputs.Monitoring = true
		res.Inputs.Now = time.Unix(0, 0).UTC()
		d, err := pgrender.Render(&res.Inputs)
		if err != nil {
			fmt.Fprintf(errOut, "PostgresCluster %s/%s is refused: %v\n", pc.Namespace, pc.Name, err)
			continue
		}
		for j, obj := range d.Objects {
			if found > 1 || j > 0 {
				fmt.Fprintln(out, "---")
			}
			b, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			if _, err := out.Write(b); err != nil {
				return err
			}
		}
	}
	if found == 0 {
		return fmt.Errorf("no PostgresCluster %s in the input", o.PostgresCluster)
	}
	return nil
}

// explainPostgresCluster answers, from a cluster's status: who is primary,
// whether the spec was applied, why no failover or switchover happened (or
// would), and how far behind each replica is.
func explainPostgresCluster(ctx context.Context, c client.Reader, ns, name string, out io.Writer) error {
	var pc postgresv1beta1.PostgresCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pc); err != nil {
		return fmt.Errorf("get PostgresCluster %s/%s: %w", ns, name, err)
	}
	s := &pc.Status
	fmt.Fprintf(out, "PostgresCluster %s/%s (generation %d, PostgreSQL %d)\n", ns, name, pc.Generation, pc.Spec.PostgresVersion)
	if cond := meta.FindStatusCondition(s.Conditions, postgresv1beta1.ConditionReconciled); cond == nil {
		fmt.Fprintln(out, "  spec: not reconciled yet (is the operator running, with the postgrescluster controller?)")
	} else if cond.Status == "True" {
		fmt.Fprintf(out, "  spec: applied (generation %d)\n", cond.ObservedGeneration)
	} else {
		fmt.Fprintf(out, "  spec: NOT applied, %s: %s\n", cond.Reason, cond.Message)
	}
	fmt.Fprintf(out, "  instances ready: %s\n", orDash(s.Ready))

	switch {
	case s.Primary == "":
		fmt.Fprintln(out, "  primary: none — writes fail until an instance is promoted")
	default:
		fmt.Fprintf(out, "  primary: %s (timeline %d)\n", s.Primary, s.Timeline)
	}
	if len(s.SynchronousStandbys) > 0 {
		fmt.Fprintf(out, "  synchronous replication: in force, commits wait for %s\n", strings.Join(s.SynchronousStandbys, ", "))
	} else {
		fmt.Fprintln(out, "  synchronous replication: not in force (commits wait for no replica)")
	}
	if s.LastFailover != nil {
		fmt.Fprintf(out, "  last failover: %s promoted at %s, %s after the old primary was lost (timeline %d)\n",
			s.LastFailover.To, s.LastFailover.Time.UTC().Format(time.RFC3339), orDash(s.LastFailover.Duration), s.LastFailover.Timeline)
	} else {
		fmt.Fprintln(out, "  last failover: none recorded")
	}
	if s.FailoverBlocked != "" {
		fmt.Fprintf(out, "  failover: BLOCKED — if the primary were lost now, nothing would be promoted: %s\n", s.FailoverBlocked)
	} else if len(s.Replicas) > 0 {
		fmt.Fprintln(out, "  failover: possible — a replica would be promoted if the primary were lost")
	}

	fmt.Fprintf(out, "  switchover: %s\n", switchoverState(&pc))
	if s.LastSwitchover != nil {
		fmt.Fprintf(out, "  last switchover: to %s at %s, took %s\n", s.LastSwitchover.To, s.LastSwitchover.Time.UTC().Format(time.RFC3339), orDash(s.LastSwitchover.Duration))
	}

	explainVersions(s, out)
	if u := s.MajorUpgrade; u != nil {
		fmt.Fprintf(out, "  major upgrade: %s\n", majorUpgradeState(u))
	}
	for _, p := range s.PendingRestart {
		fmt.Fprintf(out, "  restart pending: %s waits for a restart to apply %s (a rolling restart: replicas one at a time, then a switchover)\n",
			p.Name, strings.Join(p.Parameters, ", "))
	}

	if len(s.Replicas) == 0 {
		fmt.Fprintln(out, "  replicas: none reported")
	} else {
		fmt.Fprintln(out, "  replicas:")
		for _, r := range s.Replicas {
			fmt.Fprintf(out, "    %s: %s", r.Name, r.State)
			if r.SyncState != "" {
				fmt.Fprintf(out, " (%s)", r.SyncState)
			}
			if r.State != "NotStreaming" {
				fmt.Fprintf(out, ", %d bytes and %ss behind", r.LagBytes, orDash(r.LagSeconds))
			}
			fmt.Fprintln(out)
		}
	}
	return nil
}

// switchoverState says whether a switchover was asked for and what became
// of it.
func switchoverState(pc *postgresv1beta1.PostgresCluster) string {
	trigger := pc.Annotations[pgcontract.AnnotationTriggerSwitchover]
	var sw *postgresv1beta1.PatroniSwitchover
	if pc.Spec.Patroni != nil {
		sw = pc.Spec.Patroni.Switchover
	}
	done := pc.Status.Patroni.Switchover
	switch {
	case sw == nil || !sw.Enabled:
		if trigger != "" {
			return "the annotation " + pgcontract.AnnotationTriggerSwitchover + " is set, but spec.patroni.switchover.enabled is not: nothing happens"
		}
		return "not enabled (spec.patroni.switchover)"
	case trigger == "":
		return "enabled; set the annotation " + pgcontract.AnnotationTriggerSwitchover + " to a new value to start one"
	case done != nil && *done == trigger:
		return fmt.Sprintf("request %q carried out", trigger)
	default:
		target := "any healthy replica"
		if sw.TargetInstance != nil && *sw.TargetInstance != "" {
			target = *sw.TargetInstance
		}
		return fmt.Sprintf("request %q (%s to %s) not carried out yet", trigger, orDefault(sw.Type, postgresv1beta1.SwitchoverTypeSwitchover), target)
	}
}

// majorUpgradeState says where the last major upgrade is, and for a
// finished one its downtime.
func majorUpgradeState(u *postgresv1beta1.MajorUpgradeStatus) string {
	line := fmt.Sprintf("PostgreSQL %d → %d, %s", u.From, u.To, u.Step)
	if u.Downtime != "" {
		line += ", downtime " + u.Downtime + " (primary down → PostgreSQL " + fmt.Sprint(u.To) + " accepting writes)"
	}
	if u.Message != "" {
		line += ": " + u.Message
	}
	return line
}

func orDash(s string) string { return orDefault(s, "-") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
