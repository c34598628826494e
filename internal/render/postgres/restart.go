package postgres

import (
	"slices"
	"strconv"
	"strings"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// RestartTriggerPrefix starts the Switchover.Trigger of a switchover a
// rolling restart asks for (a user's comes from the annotation).
const RestartTriggerPrefix = "restart/"

// rollingRestart is the one step of a rolling restart the cluster's last
// observed status calls for, when instances wait for a restart to apply
// parameters: restart one streaming replica; when only the primary waits,
// switch over to a replica (which restarted already, so the old primary
// restarts as it rejoins); restart the primary in place only when no standby
// can take over or when the change lowers a limit standbys may not run
// below the primary's. One step at a time, and only while every desired
// instance is ready with a primary and runs with the current generation of
// the spec (so that every instance that will wait for a restart says so
// before the primary's turn is decided): a step waits for the cluster to be
// whole again. Each request's token is the generation and the instance, so an
// instance that restarted for it and still waits (a parameter a restart does
// not settle) is passed over rather than restarted again and again.
func rollingRestart(c *postgresv1beta1.PostgresCluster) (*pgcontract.Restart, *pgcontract.Switchover) {
	s := &c.Status
	if len(s.PendingRestart) == 0 || s.Primary == "" || (c.Spec.Shutdown != nil && *c.Spec.Shutdown) || !whole(s.Ready) ||
		s.AppliedGeneration != c.Generation {
		return nil, nil
	}
	token := func(instance string) string { return strconv.FormatInt(c.Generation, 10) + "/" + instance }
	var primary *postgresv1beta1.InstancePendingRestart
	var replicas []string
	for i := range s.PendingRestart {
		p := &s.PendingRestart[i]
		switch {
		case p.RestartDone == token(p.Name):
			// Restarted for this generation already.
		case p.Name == s.Primary:
			primary = p
		case streaming(s, p.Name):
			replicas = append(replicas, p.Name)
		}
	}
	slices.Sort(replicas)
	switch {
	case primary != nil && primary.LowersStandbyLimits:
		return &pgcontract.Restart{Instance: primary.Name, Token: token(primary.Name)}, nil
	case len(replicas) > 0:
		return &pgcontract.Restart{Instance: replicas[0], Token: token(replicas[0])}, nil
	case primary == nil:
		return nil, nil
	case !slices.ContainsFunc(s.Replicas, func(r postgresv1beta1.ReplicaStatus) bool { return streaming(s, r.Name) }):
		return &pgcontract.Restart{Instance: primary.Name, Token: token(primary.Name)}, nil
	}
	return nil, &pgcontract.Switchover{Trigger: RestartTriggerPrefix + token(primary.Name), Type: postgresv1beta1.SwitchoverTypeSwitchover}
}

// whole: "n/n" with n > 0.
func whole(ready string) bool {
	got, want, ok := strings.Cut(ready, "/")
	return ok && got == want && got != "0"
}

func streaming(s *postgresv1beta1.PostgresClusterStatus, name string) bool {
	return slices.ContainsFunc(s.Replicas, func(r postgresv1beta1.ReplicaStatus) bool {
		return r.Name == name && strings.EqualFold(r.State, "streaming")
	})
}
