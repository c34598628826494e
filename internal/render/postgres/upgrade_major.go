package postgres

import (
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Reasons a change of spec.postgresVersion is refused (Reconciled=False).
const (
	ReasonMajorUpgradeNotAllowed = "MajorUpgradeNotAllowed"
	ReasonMajorDowngrade         = "MajorDowngrade"
	ReasonMajorUpgradeBackups    = "MajorUpgradeWithBackups"
)

// ConditionMajorUpgrade reports the last major upgrade: True once every
// instance runs the new major, False when it failed (the old major runs
// on), Unknown while it runs; the reason is the step.
const ConditionMajorUpgrade = "MajorUpgrade"

// StepComplete: every instance runs the new major.
const StepComplete = "Complete"

// majorUpgrade is the major upgrade a change of spec.postgresVersion asks
// for, or nil: status.postgresVersion is the major the instances run. A
// change is run only with the allow-upgrade annotation naming the new major
// (PGO's annotation; Lookout needs no PGUpgrade object), never downwards,
// and not with backups: pgBackRest 2.45 (Debian's, in the instance image)
// does not support PostgreSQL 17 (2.52 added it), so the repository's stanza
// could not follow (stanza-upgrade).
// The token is the generation: a later change of the spec after a failed
// upgrade tries again.
func majorUpgrade(c *postgresv1beta1.PostgresCluster) (*pgcontract.MajorUpgrade, error) {
	from, to := c.Status.PostgresVersion, c.Spec.PostgresVersion
	if from == 0 || from == to {
		return nil, nil
	}
	const field = "spec.postgresVersion"
	if to < from {
		return nil, specError(field, ReasonMajorDowngrade, "the cluster runs PostgreSQL %d: a major version cannot be downgraded in place (pg_upgrade only moves forward); set %d back", from, from)
	}
	if allow := c.Annotations[pgcontract.AnnotationAllowUpgrade]; allow != strconv.Itoa(to) {
		have := "it is not set"
		if allow != "" {
			have = "it names " + strconv.Quote(allow)
		}
		return nil, specError(field, ReasonMajorUpgradeNotAllowed,
			"PostgreSQL %d → %d is a major upgrade (pg_upgrade, with downtime): annotate the cluster %s=%q to run it (%s); nothing was changed",
			from, to, pgcontract.AnnotationAllowUpgrade, strconv.Itoa(to), have)
	}
	if c.Spec.Backups != nil {
		return nil, specError("spec.backups", ReasonMajorUpgradeBackups,
			"a major upgrade of a cluster with spec.backups is not supported: pgBackRest 2.45 (the instance image's) does not support PostgreSQL %d (pgBackRest 2.52 added 17), so its stanza could not be upgraded; remove spec.backups first", to)
	}
	return &pgcontract.MajorUpgrade{From: from, To: to, Token: strconv.FormatInt(c.Generation, 10)}, nil
}

// podPGDATA is the --pgdata of an instance's pod: the one its StatefulSet
// was made with, kept across major upgrades (the instance manager follows
// pgcontract.MajorFile on the volume), so that no upgrade restarts a pod;
// a new instance gets the spec's major's.
func podPGDATA(in *Inputs, instance string) string {
	for _, sts := range in.StatefulSets {
		if sts.Name != instance {
			continue
		}
		for _, ctr := range sts.Spec.Template.Spec.Containers {
			if ctr.Name != ContainerName {
				continue
			}
			for _, a := range ctr.Args {
				if v, ok := strings.CutPrefix(a, "--pgdata="); ok {
					return v
				}
			}
		}
	}
	return pgcontract.PGDATA(in.Cluster.Spec.PostgresVersion)
}

// majorUpgradeStatus fills s.MajorUpgrade from the instances' reports (the
// primary's, else the latest started), and s.PostgresVersion with the
// primary's major; the step is Complete once every instance that answers
// runs the new major and the primary said Upgraded.
func majorUpgradeStatus(obs Observed, primary string, s *postgresv1beta1.PostgresClusterStatus) {
	var rep *pgcontract.MajorUpgradeStatus
	if p := obs.Instances[primary]; p != nil {
		rep = p.MajorUpgrade
		if m, err := strconv.Atoi(majorOf(p.PostgresVersion)); err == nil && p.PostgresVersion != "" {
			s.PostgresVersion = m
		}
	}
	if rep == nil {
		for _, st := range obs.Instances {
			if u := st.MajorUpgrade; u != nil && u.Started != nil && (rep == nil || u.Started.After(*rep.Started)) {
				rep = u
			}
		}
	}
	if rep == nil {
		return
	}
	prev := s.MajorUpgrade
	out := &postgresv1beta1.MajorUpgradeStatus{From: rep.From, To: rep.To, Step: rep.Step, Message: rep.Error}
	if prev != nil && prev.From == rep.From && prev.To == rep.To && prev.Step == StepComplete && rep.Step == pgcontract.UpgradeUpgraded {
		s.MajorUpgrade = prev
		return
	}
	if rep.Downtime.Duration > 0 {
		out.Downtime = rep.Downtime.Round(time.Millisecond).String()
	}
	if rep.Started != nil {
		t := metav1.NewTime(*rep.Started)
		out.StartTime = &t
	}
	if rep.Step == pgcontract.UpgradeUpgraded {
		var left []string
		for name, st := range obs.Instances {
			if majorOf(st.PostgresVersion) != strconv.Itoa(rep.To) || !st.Ready {
				left = append(left, name)
			}
		}
		if len(left) == 0 && len(obs.Instances) > 0 {
			out.Step = StepComplete
			now := metav1.Now()
			out.CompletionTime = &now
		} else {
			slices.Sort(left)
			out.Message = "cloning the new primary: " + strings.Join(left, ", ")
		}
	} else if rep.Finished != nil {
		t := metav1.NewTime(*rep.Finished)
		out.CompletionTime = &t
	}
	s.MajorUpgrade = out
}

// MajorUpgradeCondition is the MajorUpgrade condition of s, nil when the
// cluster has had no major upgrade.
func MajorUpgradeCondition(c *postgresv1beta1.PostgresCluster) *metav1.Condition {
	u := c.Status.MajorUpgrade
	if u == nil {
		return nil
	}
	cond := &metav1.Condition{Type: ConditionMajorUpgrade, Status: metav1.ConditionUnknown, Reason: u.Step, ObservedGeneration: c.Generation}
	switch u.Step {
	case StepComplete:
		cond.Status = metav1.ConditionTrue
		cond.Message = "every instance runs PostgreSQL " + strconv.Itoa(u.To) + "; downtime " + u.Downtime
	case pgcontract.UpgradeCheckFailed, pgcontract.UpgradeFailed:
		cond.Status = metav1.ConditionFalse
		cond.Message = "PostgreSQL " + strconv.Itoa(u.From) + " runs on: " + u.Message
	default:
		cond.Message = "PostgreSQL " + strconv.Itoa(u.From) + " → " + strconv.Itoa(u.To)
		if u.Message != "" {
			cond.Message += ": " + u.Message
		}
	}
	return cond
}
