package pginstance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

func metavMicro(t time.Time) metav1.MicroTime { return metav1.NewMicroTime(t) }

// step is one look at the Lease and postgres, and the one move it calls for.
func (m *Manager) step(ctx context.Context) error {
	cfg := m.config()
	m.mu.Lock()
	m.cfg = cfg
	fenced, role := m.fenced, m.role
	m.mu.Unlock()
	if m.pg.running() == nil && !fenced {
		if role == pgcontract.RolePrimary {
			return fmt.Errorf("postgres exited (%s) while this instance was primary", describe(m.pg.status))
		}
		// A standby that cannot follow the primary's history (it forked
		// off before this instance's position) rewinds and starts again.
		m.log.Warn("Postgres exited: rewinding before following again", "status", describe(m.pg.status))
		m.mu.Lock()
		m.fenced, m.needRewind, m.following = true, true, ""
		m.mu.Unlock()
	}
	lease, err := m.readLease(ctx)
	if err != nil {
		m.mu.Lock()
		state := m.status.State
		m.mu.Unlock()
		m.setState(state, "read lease: "+err.Error())
		return nil
	}
	m.look(ctx)
	m.noteStandbyLimits(ctx, role)
	if handled, err := m.upgradeStep(ctx, cfg, role); handled || err != nil {
		return err
	}
	if restarted, err := m.restartStep(ctx, cfg, role); restarted || err != nil {
		return err
	}
	m.backupStep(ctx, cfg, role)
	if role == pgcontract.RolePrimary {
		return m.primaryStep(ctx, cfg, lease)
	}
	return m.replicaStep(ctx, cfg, lease)
}

// look observes the local postgres.
func (m *Manager) look(ctx context.Context) {
	// The file is read before postgres is asked: what it reports as pending
	// is at least as new as this generation.
	gen := m.pg.writtenGeneration()
	var obs observation
	err := errors.New("postgres is not running")
	if m.pg.running() != nil {
		if m.conn == nil || m.conn.IsClosed() {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			c, cerr := m.pg.connect(cctx)
			cancel()
			if cerr == nil {
				m.conn = c
			}
			err = cerr
		}
		if m.conn != nil && !m.conn.IsClosed() {
			octx, cancel := context.WithTimeout(ctx, 2*time.Second)
			obs, err = observe(octx, m.conn)
			cancel()
			if err != nil {
				m.conn.Close(ctx)
			}
		}
	}
	m.mu.Lock()
	m.obs, m.up = obs, err == nil
	if m.up {
		m.obsGen = gen
	}
	if m.up && obs.Receiving {
		m.receiving = time.Now()
	}
	m.mu.Unlock()
}

func (m *Manager) primaryStep(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease) error {
	if holder(lease) != m.o.PodName {
		m.fence("another instance holds the lease")
		return nil
	}
	if !m.isOffline() {
		// A restore in place is not served until the Lease records it.
		m.label(ctx, pgcontract.RolePrimary)
	}
	m.mu.Lock()
	up, obs := m.up, m.obs
	m.mu.Unlock()
	if !up {
		return nil
	}
	if busy, err := m.inPlaceRestoreStep(ctx, cfg, lease); busy || err != nil {
		return err
	}
	m.setState("Running", "")
	others, err := m.otherInstances(ctx)
	if err != nil {
		m.setState("Running", "list pods: "+err.Error())
		return nil
	}
	// Bounded: in strict synchronous mode a write waits for a standby.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := ensureSlots(sctx, m.conn, others); err != nil {
		m.setState("Running", err.Error())
	}
	if m.usersGen != cfg.Generation {
		if err := ensureUsers(sctx, m.conn, cfg.Users); err != nil {
			m.setState("Running", err.Error())
		} else {
			m.usersGen = cfg.Generation
		}
	}
	m.syncStep(ctx, cfg, lease, obs, others)
	if m.confGen != cfg.Generation {
		if err := m.pg.writeConfig(m.confInput(cfg, "", ""), false); err == nil {
			m.pg.reload()
			m.confGen = cfg.Generation
		}
	}
	if sw := cfg.Switchover; sw != nil && sw.Trigger != "" && sw.Trigger != lease.Annotations[annotationSwitchover] {
		return m.switchover(ctx, cfg, sw, obs, others)
	}
	return nil
}

// syncStep moves the synchronous standby set one step toward the
// instances streaming now, recording it in the Lease before postgres runs
// with a wider set and after it runs with a narrower one.
func (m *Manager) syncStep(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease, obs observation, others []string) {
	var streaming []string
	for _, r := range obs.Replicas {
		if r.State == "streaming" && slices.Contains(others, r.Instance) {
			streaming = append(streaming, r.Instance)
		}
	}
	desired := desiredSyncSet(cfg.SynchronousMode, cfg.SynchronousModeStrict, cfg.SynchronousNodeCount, streaming, others)
	m.mu.Lock()
	if m.pendingSync != nil && obs.StandbyNames == m.pendingSync.standbyNames() {
		m.appliedSync, m.pendingSync = *m.pendingSync, nil
	}
	pending, applied := m.pendingSync, m.appliedSync
	m.mu.Unlock()
	if pending != nil {
		return
	}
	record, apply := syncStep(leaseSync(lease), applied, desired)
	switch {
	case record != nil:
		if err := m.writeLease(ctx, func(l *coordv1.Lease) { setLeaseSync(l, *record) }); err != nil {
			m.log.Warn("Could not record the synchronous set", "err", err)
		}
	case apply != nil:
		m.mu.Lock()
		m.pendingSync = apply
		m.mu.Unlock()
		if err := m.pg.writeConfig(m.confInput(cfg, "", ""), false); err != nil {
			m.log.Warn("Could not write the configuration", "err", err)
			return
		}
		m.log.Info("Synchronous standbys", "synchronous_standby_names", apply.standbyNames())
		m.pg.reload()
	}
}

// switchover hands the primary role to a streaming replica without losing
// an acknowledged write: a fast shutdown sends every WAL record to the
// standbys before postgres exits, the Lease goes to the target with the
// position it must reach, and this instance follows it.
func (m *Manager) switchover(ctx context.Context, cfg *pgcontract.Config, sw *pgcontract.Switchover, obs observation, others []string) error {
	target := sw.Target
	var best *pgcontract.ReplicaStatus
	for i, r := range obs.Replicas {
		if r.State != "streaming" || !slices.Contains(others, r.Instance) {
			continue
		}
		if target == r.Instance || (target == "" && (best == nil || r.LagBytes < best.LagBytes)) {
			best = &obs.Replicas[i]
		}
	}
	if target == m.o.PodName {
		return m.writeLease(ctx, func(l *coordv1.Lease) { setAnnotation(l, annotationSwitchover, sw.Trigger) })
	}
	if best == nil {
		m.setState("Running", fmt.Sprintf("switchover %s: no streaming replica %s", sw.Trigger, target))
		return nil
	}
	target = best.Instance
	m.log.Info("Switchover: handing over", "target", target, "trigger", sw.Trigger)
	m.setState("Demoting", "switchover to "+target)
	if err := m.announceHandover(ctx, target); err != nil {
		m.log.Warn("Switchover: could not announce the handover", "err", err)
	}
	// Writes go on during this checkpoint; the shutdown checkpoint after it
	// has little left to write, which shortens the pause.
	if _, err := m.conn.Exec(ctx, "CHECKPOINT"); err != nil {
		m.log.Warn("Checkpoint before switchover failed", "err", err)
	}
	// The write pause starts here: the poolers hold new transactions, then
	// postgres stops. The target reports the switchover's duration from it.
	pauseStarted := time.Now()
	m.pausePoolers(ctx, cfg)
	m.mu.Lock()
	m.role, m.fenced, m.needRewind, m.following = "", true, true, ""
	m.appliedSync, m.pendingSync = syncSet{}, nil
	m.mu.Unlock()
	// The role label goes once the Lease is handed over, not inside the
	// pause: a stopped primary takes no write through its Service anyway.
	defer m.label(ctx, "")
	m.pg.stop(syscall.SIGINT, 10*time.Second)
	out, err := m.pg.rn.run("pg_controldata", "-D", m.pg.pgdata)
	if err != nil {
		return err
	}
	handover := checkpointLocation(out)
	next := desiredSyncSet(cfg.SynchronousMode, cfg.SynchronousModeStrict, cfg.SynchronousNodeCount, nil, without(append(others, m.o.PodName), target))
	err = m.writeLease(ctx, func(l *coordv1.Lease) {
		l.Spec.HolderIdentity = ptr.To(target)
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		setAnnotation(l, annotationSwitchover, sw.Trigger)
		setAnnotation(l, annotationHandoverLSN, handover)
		setAnnotation(l, annotationHandoverStarted, pauseStarted.UTC().Format(time.RFC3339Nano))
		setAnnotation(l, annotationHolderRun, "")
		setLeaseSync(l, next)
	})
	if err != nil {
		m.log.Warn("Switchover: could not hand the lease over; the lease expires and the replicas elect", "err", err)
		m.resumePoolers(ctx, cfg, "")
		return nil
	}
	// The shutdown checkpoint is the last record this instance wrote and the
	// target promotes only once it holds it: the new timeline forks after
	// everything here, so this instance follows it without a rewind. (Should
	// it not, it stops streaming and follow rewinds it after 10 s.)
	m.mu.Lock()
	m.needRewind = handover == ""
	m.mu.Unlock()
	m.log.Info("Switchover: lease handed over", "target", target, "lsn", handover)
	return nil
}

func checkpointLocation(controldata string) string {
	for _, line := range splitLines(controldata) {
		if k, v, ok := cutColon(line); ok && k == "Latest checkpoint location" {
			return v
		}
	}
	return ""
}

func without(names []string, drop string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

func (m *Manager) replicaStep(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease) error {
	h := holder(lease)
	m.mu.Lock()
	fencedHolder := m.fencedHolder
	m.fencedHolder = fencedHolder && h == m.o.PodName
	m.mu.Unlock()
	if h == m.o.PodName && fencedHolder {
		// Postgres is down (fenced): the Lease is given up, as after a
		// restart, and the election decides who is primary — this
		// instance too, when no other can be.
		m.log.Info("Fenced while holding the lease: giving it up; the election decides who is primary")
		l := lease.DeepCopy()
		l.Spec.HolderIdentity = nil
		setAnnotation(l, annotationReleasedBy, m.o.PodName)
		if _, err := m.k.updateLease(ctx, l); err != nil {
			m.setState("Demoting", "release lease: "+err.Error())
			return nil
		}
		m.mu.Lock()
		m.fencedHolder = false
		m.mu.Unlock()
		return nil
	}
	if h == m.o.PodName {
		return m.takeHandover(ctx, cfg, lease)
	}
	if busy, err := m.restoreReplicaStep(ctx, cfg, lease); busy || err != nil {
		return err
	}
	m.mu.Lock()
	seen := m.leaseSeen
	m.mu.Unlock()
	silent := time.Since(seen)
	alive := h != "" && silent < cfg.LeaseDuration.Duration
	why := "the lease expired"
	if h == "" {
		why = "no instance holds the lease"
	}
	if alive {
		if proof := m.deathOf(ctx, cfg, h, lease, silent); proof != "" {
			alive, why = false, proof
		}
	}
	if alive {
		m.mu.Lock()
		m.lostSince = time.Time{}
		m.status.FailoverBlocked = ""
		m.mu.Unlock()
		if handoverTarget(lease) == m.o.PodName {
			m.prepareHandover(ctx, cfg, lease)
		}
		return m.follow(ctx, cfg, m.upstream(lease, h), silent < cfg.LeaseDuration.Duration*3/10)
	}
	return m.elect(ctx, cfg, lease, h, why)
}

// follow makes postgres stream from the primary h, rewinding first when
// this instance may hold WAL the primary does not.
func (m *Manager) follow(ctx context.Context, cfg *pgcontract.Config, h string, fresh bool) error {
	m.mu.Lock()
	following, since, needRewind, up, obs, receiving := m.following, m.followSince, m.needRewind, m.up, m.obs, m.receiving
	m.mu.Unlock()
	ip, err := m.podIP(ctx, h, following != h)
	if err != nil {
		m.setState("Running", err.Error())
		return nil
	}
	// Following a primary that renews its Lease without streaming from it
	// for 10 s: this instance's WAL has diverged from the primary's.
	if following == h && up && !obs.Receiving && time.Since(since) > 10*time.Second && time.Since(receiving) > 10*time.Second && fresh {
		m.log.Warn("Not streaming from the primary: rewinding", "primary", h)
		needRewind = true
	}
	if following == h && !needRewind && m.pg.running() != nil {
		// A new generation of the settings (parameters, archiving) reaches
		// a standby that keeps following too: once postgres answers, since
		// a SIGHUP before its handlers are set would end it.
		if m.confGen != cfg.Generation && up {
			if err := m.pg.writeConfig(m.confInput(cfg, h, ip), true); err != nil {
				return err
			}
			m.pg.reload()
			m.confGen = cfg.Generation
		}
		if up && obs.Receiving {
			m.label(ctx, pgcontract.RoleReplica)
			m.setState("Running", "")
		}
		return nil
	}
	if needRewind {
		m.mu.Lock()
		m.fenced = true
		m.mu.Unlock()
		m.setState("Rewinding", "pg_rewind from "+h)
		m.label(ctx, "")
		m.pg.stop(syscall.SIGINT, 5*time.Second)
		if cfg.Backups != nil {
			m.br.pushPending(cfg.Backups.Stanza, m.o.PGDATA, m.log.Warn)
		}
		if out, err := m.pg.rewind(ip, cfg.Port, m.o.PodName); err != nil {
			m.setState("Rewinding", err.Error())
			return nil
		} else {
			m.log.Info("Rewound", "primary", h, "output", lastLines(out, 2))
		}
		m.mu.Lock()
		m.needRewind = false
		m.mu.Unlock()
	}
	if err := m.pg.writeConfig(m.confInput(cfg, h, ip), true); err != nil {
		return err
	}
	if m.pg.running() == nil {
		if err := m.pg.start(); err != nil {
			return err
		}
	} else {
		m.pg.reload()
	}
	m.confGen = cfg.Generation
	m.mu.Lock()
	m.following, m.followSince, m.fenced = h, time.Now(), false
	m.mu.Unlock()
	m.log.Info("Following", "primary", h, "address", ip)
	return nil
}

var errNoPod = errors.New("no such pod")

// podIP is the address of instance name, from a pod list at most two
// seconds old unless refresh.
func (m *Manager) podIP(ctx context.Context, name string, refresh bool) (string, error) {
	if refresh || time.Since(m.podsRead) > 2*time.Second {
		if _, err := m.refreshPods(ctx); err != nil {
			return "", err
		}
	}
	ip, ok := m.podIPs[name]
	if !ok {
		return "", fmt.Errorf("instance %s: %w", name, errNoPod)
	}
	if ip == "" {
		return "", fmt.Errorf("instance %s has no address yet", name)
	}
	return ip, nil
}

func (m *Manager) refreshPods(ctx context.Context) (map[string]string, error) {
	pods, err := m.k.pods(ctx)
	if err != nil {
		return nil, err
	}
	ips, uids := map[string]string{}, map[string]types.UID{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Status.PodIP != "" {
			ips[p.Name], uids[p.Name] = p.Status.PodIP, p.UID
		}
	}
	m.podIPs, m.podUIDs, m.podsRead = ips, uids, time.Now()
	m.mu.Lock()
	m.selfUID = uids[m.o.PodName]
	m.mu.Unlock()
	return ips, nil
}

// otherInstances are the names of the cluster's other pods.
func (m *Manager) otherInstances(ctx context.Context) ([]string, error) {
	if time.Since(m.podsRead) > 2*time.Second {
		if _, err := m.refreshPods(ctx); err != nil {
			return nil, err
		}
	}
	var names []string
	for n := range m.podIPs {
		if n != m.o.PodName {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// elect runs while the primary h is lost: stop streaming from it, learn the
// positions of the peers that stopped too, and take over when electable says
// this instance may.
func (m *Manager) elect(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease, h, why string) error {
	m.mu.Lock()
	if m.lostSince.IsZero() {
		m.lostSince = time.Now()
		m.log.Warn("Primary lost", "primary", h, "reason", why)
	}
	following, up, obs := m.following, m.up, m.obs
	m.mu.Unlock()
	m.label(ctx, "")
	if cfg.Paused {
		m.blocked("the cluster is paused")
		return nil
	}
	if following != "" || m.pg.running() == nil {
		m.mu.Lock()
		m.following = ""
		m.mu.Unlock()
		if err := m.pg.writeConfig(m.confInput(cfg, "", ""), true); err != nil {
			return err
		}
		if m.pg.running() == nil {
			m.mu.Lock()
			m.fenced = false
			m.mu.Unlock()
			return m.pg.start()
		}
		m.pg.reload()
		return nil
	}
	if !up || !obs.InRecovery || obs.Receiving {
		m.setState("Running", "waiting for the WAL receiver to stop")
		return nil
	}
	peers, primaryAlive := m.peerPositions(ctx)
	if primaryAlive != "" {
		m.setState("Running", primaryAlive+" reports itself primary")
		return nil
	}
	known := append(peers, peer{Name: m.o.PodName, LSN: obs.position()})
	if h == "" && lease != nil {
		h = lease.Annotations[annotationReleasedBy]
	}
	ok, reason := electable(m.o.PodName, known, h, leaseSync(lease), cfg.MaximumLagOnFailover, leaseLSN(lease, annotationLSN))
	if !ok {
		m.blocked(reason)
		return nil
	}
	return m.takeOver(ctx, cfg, lease, why)
}

func (m *Manager) blocked(reason string) {
	m.mu.Lock()
	changed := m.status.FailoverBlocked != reason
	m.status.FailoverBlocked = reason
	m.mu.Unlock()
	if changed {
		m.log.Info("Not taking over", "reason", reason)
	}
}

// peerPositions asks every other instance for its status; it returns the
// positions of those that stopped streaming, and the name of one that says
// it is primary.
func (m *Manager) peerPositions(ctx context.Context) ([]peer, string) {
	ips, err := m.refreshPods(ctx)
	if err != nil {
		return nil, ""
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var peers []peer
	primary := ""
	client := &http.Client{Timeout: 500 * time.Millisecond}
	for name, ip := range ips {
		if name == m.o.PodName || ip == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := fetchStatus(ctx, client, ip)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if st.Role == pgcontract.RolePrimary {
				primary = name
				return
			}
			if st.Streaming {
				return
			}
			var best uint64
			for _, s := range []string{st.ReceivedLSN, st.ReplayedLSN, st.CurrentLSN} {
				if v, err := parseLSN(s); err == nil && v > best {
					best = v
				}
			}
			if best > 0 {
				peers = append(peers, peer{Name: name, LSN: best})
			}
		}()
	}
	wg.Wait()
	return peers, primary
}

func fetchStatus(ctx context.Context, client *http.Client, ip string) (pgcontract.Status, error) {
	var st pgcontract.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, strconv.Itoa(pgcontract.ManagerPort))+pgcontract.PathStatus, nil)
	if err != nil {
		return st, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// takeOver takes the Lease from what this instance read (the update fails
// when anyone changed it since) and promotes postgres.
func (m *Manager) takeOver(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease, why string) error {
	others, err := m.otherInstances(ctx)
	if err != nil {
		return nil
	}
	// The slots the other instances will stream from exist before the
	// promotion, as a switchover's target prepares them: a standby's first
	// connection finds its slot, and the first synchronous commit its
	// standby, without waiting for the new primary's first step.
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := ensureSlots(sctx, m.conn, others); err != nil {
		m.log.Warn("Could not create the standbys' slots before promotion", "err", err)
	}
	cancel()
	next := desiredSyncSet(cfg.SynchronousMode, cfg.SynchronousModeStrict, cfg.SynchronousNodeCount, nil, others)
	if err := m.applySyncBeforePromotion(ctx, cfg, next); err != nil {
		m.setState("Promoting", err.Error())
		return nil
	}
	m.mu.Lock()
	pos := formatLSN(m.obs.position())
	m.mu.Unlock()
	started := time.Now()
	now := metavMicro(started)
	var taken *coordv1.Lease
	if lease == nil {
		taken, err = m.k.createLease(ctx, cfg.LeaseDuration.Duration)
	} else {
		l := lease.DeepCopy()
		l.Spec.HolderIdentity = ptr.To(m.o.PodName)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		l.Spec.LeaseDurationSeconds = ptr.To(int32(max(1, cfg.LeaseDuration.Duration/time.Second)))
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		setLeaseSync(l, next)
		setAnnotation(l, annotationLSN, pos)
		setAnnotation(l, annotationHandoverLSN, "")
		setAnnotation(l, annotationHandoverTo, "")
		setAnnotation(l, annotationReleasedBy, "")
		setAnnotation(l, annotationHolderRun, m.holderRun())
		taken, err = m.k.updateLease(ctx, l)
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		m.log.Info("Another instance changed the lease first")
		return nil
	}
	if err != nil {
		m.setState("Promoting", "take the lease: "+err.Error())
		return nil
	}
	m.noteLease(taken)
	m.log.Info("Took the lease", "write", time.Since(started).Round(time.Millisecond), "reason", why)
	m.mu.Lock()
	lost := m.lostSince
	m.mu.Unlock()
	return m.promote(ctx, started, pgcontract.PromotionFailover, lost)
}

// takeHandover promotes the target of a switchover once it holds every
// record the old primary wrote.
func (m *Manager) takeHandover(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease) error {
	m.mu.Lock()
	up, obs := m.up, m.obs
	m.mu.Unlock()
	want := leaseLSN(lease, annotationHandoverLSN)
	if !up || obs.position() < want {
		m.setState("Promoting", fmt.Sprintf("switchover: catching up to %s", formatLSN(want)))
		return nil
	}
	if err := m.applySyncBeforePromotion(ctx, cfg, leaseSync(lease)); err != nil {
		m.setState("Promoting", err.Error())
		return nil
	}
	started := time.Now()
	m.mu.Lock()
	m.role, m.lastRenew = pgcontract.RolePrimary, started
	pause := handoverStarted(lease, m.leaseSeen, started)
	m.mu.Unlock()
	if err := m.writeLease(ctx, func(l *coordv1.Lease) {
		setAnnotation(l, annotationHandoverTo, "")
		setAnnotation(l, annotationHandoverStarted, "")
	}); err != nil {
		m.fence("renew the handed-over lease: " + err.Error())
		return nil
	}
	return m.promote(ctx, started, pgcontract.PromotionSwitchover, pause)
}

// applySyncBeforePromotion makes postgres run with the synchronous set the
// Lease records for the new primary before it accepts a write.
func (m *Manager) applySyncBeforePromotion(ctx context.Context, cfg *pgcontract.Config, s syncSet) error {
	m.mu.Lock()
	prepared := m.appliedSync.equal(s) && m.pendingSync == nil
	m.appliedSync, m.pendingSync = s, nil
	m.mu.Unlock()
	var names string
	if prepared && m.conn.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&names) == nil && names == s.standbyNames() {
		return nil // prepareHandover applied it
	}
	if err := m.pg.writeConfig(m.confInput(cfg, "", ""), true); err != nil {
		return err
	}
	m.pg.reload()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var names string
		if err := m.conn.QueryRow(ctx, "SHOW synchronous_standby_names").Scan(&names); err == nil && names == s.standbyNames() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not take synchronous_standby_names %q", s.standbyNames())
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// promote makes this instance primary; reason (pgcontract.PromotionFailover or
// PromotionSwitchover) is what its status reports of the promotion, and its
// duration runs from since: when the primary was seen lost, or when the old
// primary began the handover's write pause.
func (m *Manager) promote(ctx context.Context, renewed time.Time, reason string, since time.Time) error {
	m.mu.Lock()
	m.role, m.lastRenew, m.following = pgcontract.RolePrimary, renewed, ""
	m.mu.Unlock()
	m.setState("Promoting", "")
	var ok bool
	if err := m.conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil || !ok {
		m.fence(fmt.Sprintf("promotion failed: %v", err))
		return nil
	}
	if err := m.pg.writeConfig(m.confInput(m.config(), "", ""), false); err != nil {
		return err
	}
	if m.config().Backups != nil {
		m.log.Info("Archiving the old timeline's segments again", "segments", archiveOldTimeline(m.o.PGDATA))
	}
	now := time.Now()
	// The end-of-recovery checkpoint is spread over minutes; until one
	// completes, the control file names the old timeline and pg_rewind on a
	// former primary finds nothing to rewind.
	go func() {
		if _, err := m.pg.rn.run("psql", "-X", "-q", "-h", m.o.SocketDir, "-p", strconv.Itoa(m.pg.port), "-U", "postgres", "-d", "postgres", "-c", "CHECKPOINT"); err != nil {
			m.log.Warn("Checkpoint after promotion failed", "err", err)
		}
	}()
	m.mu.Lock()
	m.needRewind, m.fenced = false, false
	m.status.LastPromotion, m.status.LastPromotionReason = &now, reason
	m.status.FailoverBlocked = ""
	var took time.Duration
	if !since.IsZero() {
		took = now.Sub(since)
	}
	m.status.LastPromotionDuration = pgcontract.Duration{Duration: took}
	m.lostSince = time.Time{}
	m.usersGen, m.confGen = -1, -1
	m.mu.Unlock()
	m.log.Info("Promoted", "reason", reason, "took", took.Round(time.Millisecond))
	// Poolers paused by a switchover wait for this; after a failover they
	// repoint on their own, and one a dead primary left paused resumes.
	go m.resumePoolers(ctx, m.config(), m.o.PodName)
	m.label(ctx, pgcontract.RolePrimary)
	return nil
}

// label sets the role label on the manager's own pod when it changed.
func (m *Manager) label(ctx context.Context, role string) {
	if m.labelled == role+"!" {
		return
	}
	if err := m.k.setRole(ctx, role); err != nil {
		m.log.Warn("Could not label the pod", "role", role, "err", err)
		return
	}
	m.labelled = role + "!"
}
