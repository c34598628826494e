package pginstance

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// A planned switchover is announced before the primary stops: the primary
// writes annotationHandoverTo into the Lease it still holds, so that the
// target and the other standbys do, while writes still go on, what would
// otherwise lengthen the pause after it stops:
//
//   - the target creates the replication slots of the other instances and
//     runs with the synchronous set it will be promoted with;
//   - every other standby streams from the target (cascading through it
//     until it is promoted, then following its new timeline), so that the
//     new primary's first synchronous commit finds a standby at once.
//
// The announcement is cleared by whoever writes the Lease as its next holder.
const annotationHandoverTo = annotationPrefix + "handover-to"

// annotationHandoverStarted is when the old primary of a switchover began
// its write pause (RFC 3339), written with the handover: the target reports
// the switchover's duration from it.
const annotationHandoverStarted = annotationPrefix + "handover-started"

// handoverStarted is when the write pause of the handover in l began: as the
// old primary wrote it, unless that is missing or not before now (another
// clock), else seen, when this instance saw the handover.
func handoverStarted(l *coordv1.Lease, seen, now time.Time) time.Time {
	if l != nil {
		if t, err := time.Parse(time.RFC3339Nano, l.Annotations[annotationHandoverStarted]); err == nil && t.Before(now) && now.Sub(t) < time.Hour {
			return t
		}
	}
	return seen
}

// handoverTarget is the instance the holder of l announced it hands over to.
func handoverTarget(l *coordv1.Lease) string {
	if l == nil {
		return ""
	}
	return l.Annotations[annotationHandoverTo]
}

// announceHandover tells the target and the other standbys that the primary
// is about to hand the Lease to target.
func (m *Manager) announceHandover(ctx context.Context, target string) error {
	return m.writeLease(ctx, func(l *coordv1.Lease) { setAnnotation(l, annotationHandoverTo, target) })
}

// prepareHandover runs on the announced target while the old primary still
// serves: the slots its standbys will stream from and the synchronous set it
// will run with as primary, both ready before the old primary stops.
func (m *Manager) prepareHandover(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease) {
	m.mu.Lock()
	up, inRecovery, applied := m.up, m.obs.InRecovery, m.appliedSync
	m.mu.Unlock()
	if !up || !inRecovery {
		return
	}
	others, err := m.otherInstances(ctx)
	if err != nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := ensureSlots(sctx, m.conn, others); err != nil {
		m.log.Warn("Switchover: could not create the standbys' slots before promotion", "err", err)
	}
	next := desiredSyncSet(cfg.SynchronousMode, cfg.SynchronousModeStrict, cfg.SynchronousNodeCount, nil, others)
	if applied.equal(next) {
		return
	}
	// Still a standby streaming from the primary: the configuration keeps
	// following it (a standby ignores synchronous_standby_names until it is
	// promoted).
	m.mu.Lock()
	following := m.following
	m.mu.Unlock()
	ip, err := m.podIP(ctx, following, false)
	if following == "" || err != nil {
		return
	}
	m.mu.Lock()
	m.appliedSync, m.pendingSync = next, nil
	m.mu.Unlock()
	if err := m.pg.writeConfig(m.confInput(cfg, following, ip), true); err != nil {
		m.log.Warn("Switchover: could not apply the synchronous set before promotion", "err", err)
		return
	}
	m.pg.reload()
	m.log.Info("Switchover: ready to take over", "primary", holder(lease), "synchronous_standby_names", next.standbyNames())
}

// upstream is the instance a standby streams from while h holds the Lease:
// the announced target of a switchover, else h.
func (m *Manager) upstream(lease *coordv1.Lease, h string) string {
	if t := handoverTarget(lease); t != "" && t != m.o.PodName && t != h {
		return t
	}
	return h
}

// watchLease wakes the manager's loop whenever the Lease changes, so that a
// handover or a new holder is acted on at once rather than at the next tick.
func (k *kube) watchLease(ctx context.Context, changed chan<- struct{}) {
	WatchLease(ctx, k.cs, k.ns, k.cluster, changed)
}

// WatchLease sends on changed (without blocking) whenever the Lease of
// cluster changes, until ctx ends.
func WatchLease(ctx context.Context, cs kubernetes.Interface, ns, cluster string, changed chan<- struct{}) {
	leases := cs.CoordinationV1().Leases(ns)
	name := pgcontract.LeaseName(cluster)
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		opened := time.Now()
		for range w.ResultChan() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		w.Stop()
		if time.Since(opened) < time.Second {
			sleep(ctx, time.Second)
		}
	}
}
