package postgres

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Observed is what the controller saw of a running cluster.
type Observed struct {
	StatefulSets []*appsv1.StatefulSet
	Pods         []corev1.Pod
	// Instances is each instance manager's answer at PathStatus, by pod
	// name; a pod that did not answer is missing.
	Instances map[string]*pgcontract.Status
	// Jobs are the cluster's backup Jobs: the manual backup's and those
	// its CronJobs made.
	Jobs []*batchv1.Job
}

// Counts are the instances wanted and ready.
type Counts struct{ Desired, Ready int32 }

// ObservedStatus writes into s what obs says of cluster c: the instance
// sets' counts, the primary, its timeline and synchronous standbys, each
// replica's lag, why a failover would be blocked, and the last failover and
// switchover (kept from s when no instance reports a newer one).
func ObservedStatus(c *postgresv1beta1.PostgresCluster, obs Observed, s *postgresv1beta1.PostgresClusterStatus) Counts {
	var counts Counts
	shutdown := c.Spec.Shutdown != nil && *c.Spec.Shutdown
	s.InstanceSets = s.InstanceSets[:0]
	for i := range c.Spec.InstanceSets {
		set := &c.Spec.InstanceSets[i]
		name := SetName(set, i)
		st := postgresv1beta1.PostgresInstanceSetStatus{Name: name}
		for _, sts := range obs.StatefulSets {
			if sts.Labels[pgcontract.LabelInstanceSet] == name {
				st.Replicas += sts.Status.Replicas
				st.ReadyReplicas += sts.Status.ReadyReplicas
				st.UpdatedReplicas += sts.Status.UpdatedReplicas
			}
		}
		s.InstanceSets = append(s.InstanceSets, st)
		if !shutdown {
			counts.Desired += replicas(set)
		}
		counts.Ready += st.ReadyReplicas
	}
	if len(s.InstanceSets) == 0 {
		s.InstanceSets = nil
	}
	s.Ready = strconv.Itoa(int(counts.Ready)) + "/" + strconv.Itoa(int(counts.Desired))

	names := make([]string, 0, len(obs.Instances))
	for n := range obs.Instances {
		names = append(names, n)
	}
	slices.Sort(names)

	// The primary: the instance that says so, else the pod labelled so.
	var primary *pgcontract.Status
	s.Primary = ""
	for _, n := range names {
		if st := obs.Instances[n]; st.Role == pgcontract.RolePrimary {
			primary, s.Primary = st, n
			break
		}
	}
	if s.Primary == "" {
		for _, p := range obs.Pods {
			if p.Labels[pgcontract.LabelRole] == pgcontract.RolePrimary && p.DeletionTimestamp.IsZero() {
				s.Primary = p.Name
			}
		}
	}

	s.Replicas, s.SynchronousStandbys, s.FailoverBlocked, s.PendingRestart = nil, nil, "", nil
	s.AppliedGeneration = 0
	if len(names) > 0 && int32(len(names)) >= counts.Desired {
		s.AppliedGeneration = obs.Instances[names[0]].AppliedGeneration
		for _, n := range names[1:] {
			s.AppliedGeneration = min(s.AppliedGeneration, obs.Instances[n].AppliedGeneration)
		}
	}
	streaming := map[string]bool{}
	if primary != nil {
		s.Timeline = int64(primary.Timeline)
		s.SynchronousStandbys = slices.Clone(primary.SynchronousStandbys)
		if primary.SystemIdentifier != "" {
			s.Patroni.SystemIdentifier = primary.SystemIdentifier
		}
		for _, r := range primary.Replicas {
			streaming[r.Instance] = true
			s.Replicas = append(s.Replicas, postgresv1beta1.ReplicaStatus{
				Name: r.Instance, State: r.State, SyncState: r.SyncState,
				LagBytes: r.LagBytes, LagSeconds: strconv.FormatFloat(r.LagSeconds, 'f', -1, 64),
			})
		}
	}
	for _, n := range names {
		st := obs.Instances[n]
		if st.Role == pgcontract.RoleReplica && !streaming[n] {
			s.Replicas = append(s.Replicas, postgresv1beta1.ReplicaStatus{Name: n, State: "NotStreaming"})
		}
		if st.FailoverBlocked != "" && s.FailoverBlocked == "" {
			s.FailoverBlocked = n + ": " + st.FailoverBlocked
		}
		if st.PostgresVersion != "" {
			if major, err := strconv.Atoi(majorOf(st.PostgresVersion)); err == nil {
				s.PostgresVersion = major
			}
		}
		if len(st.PendingRestart) > 0 {
			s.PendingRestart = append(s.PendingRestart, postgresv1beta1.InstancePendingRestart{
				Name: n, Parameters: slices.Clone(st.PendingRestart), RestartDone: st.RestartDone,
				LowersStandbyLimits: st.LowersStandbyLimits,
			})
		}
		if st.LastSwitchoverTrigger != "" && st.LastSwitchoverTrigger == c.Annotations[pgcontract.AnnotationTriggerSwitchover] {
			t := st.LastSwitchoverTrigger
			s.Patroni.Switchover = &t
		}
	}
	s.InstanceVersions = instanceVersions(obs)
	slices.SortFunc(s.Replicas, func(a, b postgresv1beta1.ReplicaStatus) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	if s.FailoverBlocked == "" && counts.Desired > 1 && len(s.Replicas) == 0 && s.Primary != "" {
		s.FailoverBlocked = "no replica is running: there is nothing to promote"
	}

	majorUpgradeStatus(obs, s.Primary, s)
	if primary != nil && primary.LastPromotion != nil {
		change := &postgresv1beta1.PrimaryChange{
			Time: metav1.NewTime(*primary.LastPromotion), To: s.Primary,
			Duration: primary.LastPromotionDuration.String(), Timeline: int64(primary.Timeline),
		}
		switch primary.LastPromotionReason {
		case pgcontract.PromotionFailover:
			s.LastFailover = change
		case pgcontract.PromotionSwitchover:
			s.LastSwitchover = change
			if s.Patroni.SwitchoverTimeline == nil || *s.Patroni.SwitchoverTimeline != int64(primary.Timeline) {
				tl := int64(primary.Timeline)
				s.Patroni.SwitchoverTimeline = &tl
			}
		}
	}
	return counts
}

// majorOf is the major of a server version ("15.18" → "15").
func majorOf(v string) string {
	for i, r := range v {
		if r < '0' || r > '9' {
			return v[:i]
		}
	}
	return v
}
