package pginstance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// The Lease carries an in-place restore: the primary names the one it is
// carrying out (the replicas stop while it is there), then the last one
// done (a replica whose data is older clones the primary again).
const (
	annotationRestoring = annotationPrefix + "restoring"
	annotationRestored  = annotationPrefix + "restored"
)

// inPlace is what the manager remembers of in-place restores; loop only.
type inPlace struct {
	// refused is the ID whose target check failed, or whose restore
	// failed: a new ID is needed to try again.
	refused string
	// done is the ID this primary restored, until the Lease records it.
	done string
	// stopped, on a replica, is the ID it stopped postgres for.
	stopped string
}

// restoredMarker holds, beside the data directory, the ID of the in-place
// restore the data descends from.
func (m *Manager) restoredMarker() string {
	return filepath.Join(filepath.Dir(m.o.PGDATA), "lookout-restored")
}

func (m *Manager) dataRestored() string {
	b, _ := os.ReadFile(m.restoredMarker())
	return strings.TrimSpace(string(b))
}

func (m *Manager) noteRestored(id string) {
	if id == "" {
		_ = os.Remove(m.restoredMarker())
		return
	}
	if err := m.pg.rn.writeFile(m.restoredMarker(), []byte(id+"\n")); err != nil {
		m.log.Warn("Could not note the in-place restore the data descends from", "err", err)
	}
}

func (m *Manager) setRestoreStep(id, step, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.status.InPlaceRestore; cur == nil || cur.ID != id || cur.Step != step || cur.Reason != reason {
		m.log.Info("In-place restore", "id", id, "step", step, "reason", reason)
	}
	m.status.InPlaceRestore = &pgcontract.InPlaceRestoreStatus{ID: id, Step: step, Reason: reason}
}

// inPlaceRestoreStep, on the primary, carries out the in-place restore the
// Config asks for when the Lease does not record it done yet. It reports
// whether it did anything.
func (m *Manager) inPlaceRestoreStep(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease) (bool, error) {
	r := cfg.InPlaceRestore
	if r == nil || r.ID == "" || cfg.Backups == nil || lease == nil || r.ID == lease.Annotations[annotationRestored] || r.ID == m.ipr.refused {
		return false, nil
	}
	if m.ipr.done == r.ID {
		// Restored; the Lease has yet to say so.
		return true, m.recordRestored(ctx, r.ID)
	}
	return true, m.restoreInPlace(ctx, cfg, r)
}

// restoreInPlace checks the target, stops the replicas, restores this
// primary's data with --delta, replays WAL to the target and promotes on a
// new timeline; the replicas then clone it again. Nothing is stopped
// before the repository has shown it holds the target.
func (m *Manager) restoreInPlace(ctx context.Context, cfg *pgcontract.Config, r *pgcontract.InPlaceRestore) error {
	stanza := cfg.Backups.Stanza
	m.setRestoreStep(r.ID, pgcontract.RestoreChecking, "reading "+r.Repo)
	refuse := func(err error) error {
		m.ipr.refused = r.ID
		m.setRestoreStep(r.ID, pgcontract.RestoreRefused, err.Error())
		return nil
	}
	if !slices.ContainsFunc(cfg.Backups.Repos, func(x pgcontract.Repo) bool { return x.Name == r.Repo }) {
		return refuse(fmt.Errorf("%s is not one of the cluster's repositories", r.Repo))
	}
	args := append(m.br.args(stanza), "--repo="+strings.TrimPrefix(r.Repo, "repo"))
	if err := m.br.checkTarget(args, stanza, r.Repo, r.Options); err != nil {
		return refuse(err)
	}
	if err := m.writeLease(ctx, func(l *coordv1.Lease) { setAnnotation(l, annotationRestoring, r.ID) }); err != nil {
		m.setRestoreStep(r.ID, pgcontract.RestoreChecking, "announce the restore in the lease: "+err.Error())
		return nil
	}
	m.waitReplicasStopped(ctx, r.ID)
	if !m.isPrimary() {
		// Fenced while the replicas stopped: whoever holds the Lease next
		// carries the restore out.
		return nil
	}

	start := time.Now()
	m.setOffline(true)
	m.setRestoreStep(r.ID, pgcontract.RestoreRestoring, "pgbackrest restore --delta from "+r.Repo)
	m.setState("Restoring", "in-place restore "+r.ID+" from "+r.Repo)
	m.label(ctx, "")
	if m.conn != nil {
		m.conn.Close(ctx)
		m.conn = nil
	}
	m.mu.Lock()
	m.up = false
	// No replica holds the new timeline: commits wait for none until they
	// have cloned it.
	m.appliedSync, m.pendingSync = syncSet{}, nil
	m.mu.Unlock()
	m.pg.stop(syscall.SIGINT, time.Minute)
	_, err := m.br.run(restoreCommand(append(args, "--delta"), r.Options)...)
	if err == nil && !m.isPrimary() {
		// Only the Lease's holder may promote the restored data: another
		// instance's promotion would share its new timeline's number.
		err = errors.New("another instance took the lease during the restore")
	}
	if err == nil {
		m.setRestoreStep(r.ID, pgcontract.RestoreReplaying, "replaying WAL from "+r.Repo)
		err = m.replayAndPromote(ctx, cfg, r.Repo)
	}
	if err == nil {
		err = m.confirmLease(ctx, r.ID)
	}
	if err != nil {
		return m.inPlaceFailed(ctx, r.ID, err)
	}
	m.noteRestored(r.ID)
	m.ipr.done = r.ID
	m.mu.Lock()
	m.usersGen, m.confGen = -1, -1
	m.mu.Unlock()
	m.log.Info("Restored in place and promoted", "id", r.ID, "repo", r.Repo, "options", strings.Join(r.Options, " "),
		"duration", time.Since(start).Round(time.Millisecond))
	return m.recordRestored(ctx, r.ID)
}

// recordRestored writes the restore done into the Lease: the replicas
// clone this primary again.
func (m *Manager) recordRestored(ctx context.Context, id string) error {
	err := m.writeLease(ctx, func(l *coordv1.Lease) {
		setAnnotation(l, annotationRestoring, "")
		setAnnotation(l, annotationRestored, id)
		setLeaseSync(l, syncSet{})
	})
	if err != nil {
		m.setRestoreStep(id, pgcontract.RestoreReplaying, "restored; record it in the lease: "+err.Error())
		return nil
	}
	m.ipr.done = ""
	m.setOffline(false)
	m.setRestoreStep(id, pgcontract.RestoreDone, "")
	return nil
}

func (m *Manager) setOffline(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offline = on
}

func (m *Manager) isOffline() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offline
}

func (m *Manager) isPrimary() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.role == pgcontract.RolePrimary
}

// confirmLease renews the Lease once the restored data is promoted. One
// that finds another holder fails the restore: two primaries would share a
// timeline's number.
func (m *Manager) confirmLease(ctx context.Context, id string) error {
	err := m.renewOffline(ctx, func(err error) {
		m.setRestoreStep(id, pgcontract.RestoreReplaying, "promoted; renew the lease: "+err.Error())
	})
	if err != nil {
		return errors.New("another instance took the lease during the restore")
	}
	return nil
}

// renewOffline renews the Lease of a primary that is offline, trying again
// (after telling waiting) while the apiserver does not answer: the
// replicas wait while this manager says what it is doing. It fails only
// when another instance holds the Lease, or this one was fenced.
func (m *Manager) renewOffline(ctx context.Context, waiting func(error)) error {
	for {
		err := m.writeLease(ctx, nil)
		if err == nil && m.isPrimary() {
			return nil
		}
		if errors.Is(err, errLeaseLost) || err == nil || ctx.Err() != nil {
			return errLeaseLost
		}
		waiting(err)
		sleep(ctx, 500*time.Millisecond)
	}
}

// holderRestoring reports whether the Lease's holder h answers that it is
// restoring or replaying for the in-place restore id, postgres stopped for
// it: its Lease may fall silent while the apiserver is slow, and an
// election would bring back the data it is replacing.
func (m *Manager) holderRestoring(ctx context.Context, h, id string) bool {
	ip, err := m.podIP(ctx, h, false)
	if err != nil || ip == "" {
		return false
	}
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := fetchStatus(fctx, http.DefaultClient, ip)
	if err != nil || st.InPlaceRestore == nil || st.InPlaceRestore.ID != id {
		return false
	}
	switch st.InPlaceRestore.Step {
	case pgcontract.RestoreRestoring, pgcontract.RestoreReplaying:
		return true
	}
	return false
}

// waitReplicasStopped waits until every other instance that answers says
// it stopped for the restore id (two minutes at most: one that does not
// stop clones the primary again afterwards all the same).
func (m *Manager) waitReplicasStopped(ctx context.Context, id string) {
	deadline := time.Now().Add(2 * time.Minute)
	client := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		ips, err := m.refreshPods(ctx)
		var pending []string
		for _, name := range slices.Sorted(maps.Keys(ips)) {
			if name == m.o.PodName || ips[name] == "" {
				continue
			}
			st, ferr := fetchStatus(ctx, client, ips[name])
			if ferr != nil {
				continue // its manager does not answer: nor does its postgres
			}
			if r := st.InPlaceRestore; r == nil || r.ID != id || r.Step != pgcontract.RestoreStopped {
				pending = append(pending, name)
			}
		}
		if err == nil && len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			m.log.Warn("Replicas did not stop for the in-place restore; going on", "id", id, "pending", pending)
			return
		}
		m.setRestoreStep(id, pgcontract.RestoreStopping, "waiting for "+strings.Join(pending, ", ")+" to stop")
		sleep(ctx, 300*time.Millisecond)
	}
}

// inPlaceFailed handles a restore that failed after postgres stopped: the
// data here is neither what it was nor the target, so it is removed, the
// Lease is given up, and the election promotes a replica, whose data the
// restore never touched; this instance then clones it.
func (m *Manager) inPlaceFailed(ctx context.Context, id string, err error) error {
	m.log.Error("In-place restore failed", "id", id, "err", err)
	m.ipr.refused = id
	m.setOffline(false)
	m.pg.stop(syscall.SIGQUIT, 0)
	if m.conn != nil {
		m.conn.Close(ctx)
		m.conn = nil
	}
	m.mu.Lock()
	m.role, m.fenced, m.needRewind, m.following = "", true, false, ""
	m.mu.Unlock()
	_ = os.RemoveAll(m.o.PGDATA)
	m.noteRestored("")
	m.setRestoreStep(id, pgcontract.RestoreFailed, err.Error())
	m.setState("Failed", "in-place restore "+id+": "+err.Error())
	if l, lerr := m.k.getLease(ctx); lerr == nil && holder(l) == m.o.PodName {
		l.Spec.HolderIdentity = nil
		setAnnotation(l, annotationRestoring, "")
		setAnnotation(l, annotationReleasedBy, m.o.PodName)
		if _, err := m.k.updateLease(ctx, l); err != nil {
			m.log.Warn("Could not give the lease up after the failed restore; it expires", "err", err)
		}
	}
	return nil
}

// restoreReplicaStep is a replica's part: it stops postgres (keeping its
// data) while the primary restores, and clones the primary again once the
// Lease records a restore its data does not descend from. It reports
// whether it did anything.
func (m *Manager) restoreReplicaStep(ctx context.Context, cfg *pgcontract.Config, lease *coordv1.Lease) (bool, error) {
	h := holder(lease)
	if h == m.o.PodName {
		return false, nil
	}
	m.mu.Lock()
	silent := time.Since(m.leaseSeen)
	m.mu.Unlock()
	var restoring, restored string
	if lease != nil {
		restoring, restored = lease.Annotations[annotationRestoring], lease.Annotations[annotationRestored]
	}
	// A primary lost in the middle of a restore leaves the replicas' data
	// as it was: the election goes on as after any loss.
	if restoring != "" && h != "" && (silent < cfg.LeaseDuration.Duration || m.holderRestoring(ctx, h, restoring)) {
		if m.ipr.stopped != restoring {
			m.ipr.stopped = restoring
			m.label(ctx, "")
			if m.conn != nil {
				m.conn.Close(ctx)
				m.conn = nil
			}
			m.mu.Lock()
			m.fenced, m.following, m.needRewind, m.up = true, "", false, false
			m.mu.Unlock()
			m.pg.stop(syscall.SIGINT, 30*time.Second)
		}
		m.setRestoreStep(restoring, pgcontract.RestoreStopped, "waiting for "+h+" to restore")
		m.setState("Stopped", "in-place restore "+restoring+": waiting for "+h)
		return true, nil
	}
	if m.pg.hasData() && (restored == "" || restored == m.dataRestored()) {
		m.ipr.stopped = "" // a restore that failed: this data is the cluster's, and postgres starts again
		return false, nil
	}
	if h == "" || silent >= cfg.LeaseDuration.Duration {
		m.setState("Initializing", "no data to run: waiting for a primary to clone")
		return true, nil
	}
	if restored != "" {
		m.setRestoreStep(restored, pgcontract.RestoreRecloning, "pg_basebackup from "+h)
	}
	m.mu.Lock()
	m.fenced, m.following, m.up = true, "", false
	m.mu.Unlock()
	m.label(ctx, "")
	m.pg.stop(syscall.SIGINT, 30*time.Second)
	ip, err := m.podIP(ctx, h, true)
	if err == nil {
		m.setState("Cloning", "pg_basebackup from "+h)
		err = m.pg.basebackup(ip, cfg.Port, m.o.PodName)
	}
	if err != nil {
		m.setState("Cloning", fmt.Sprintf("clone from %s: %v", h, err))
		return true, nil
	}
	m.noteRestored(restored)
	if err := m.startStandby(cfg, h, ip); err != nil {
		return true, err
	}
	m.mu.Lock()
	m.fenced, m.needRewind = false, false
	m.mu.Unlock()
	m.ipr.stopped = ""
	if restored != "" {
		m.setRestoreStep(restored, pgcontract.RestoreDone, "")
	}
	m.log.Info("Cloned the primary again", "primary", h, "restore", restored)
	return true, nil
}
