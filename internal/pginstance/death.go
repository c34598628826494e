package pginstance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Proof of death: a replica may start a failover before the Lease expires
// only when it knows the primary can no longer acknowledge a commit.
//
// On local pods a killed primary's address stays dead: its ports refuse.
// On a node the kubelet restarts the killed container in the same pod, at the
// same address, within a second or two, and the new manager answers on its
// port before it has done anything else: the ports prove nothing then. What
// does is the run: every start of the manager draws a new incarnation, which
// it serves in its status, and the primary records its own (and its pod's
// UID) in the Lease with each renewal. A manager of the same pod answering
// with another incarnation means the container that held the Lease ended —
// the manager is its PID 1 and postgres its child, so when it ended every
// process of it did, postgres included — and the restarted one never serves
// as primary before an election (it starts as a standby).

// annotationHolderRun is "<pod UID>/<incarnation>" of the manager that holds
// the Lease, written by it with every renewal.
const annotationHolderRun = annotationPrefix + "holder-run"

// newIncarnation is a random id for one run of the manager.
func newIncarnation() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b)
}

// holderRun is the value of annotationHolderRun for this run, or "" while
// the manager does not know its pod's UID yet.
func (m *Manager) holderRun() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.selfUID == "" {
		return ""
	}
	return string(m.selfUID) + "/" + m.incarnation
}

// seekProof says whether a replica looks for proof of the death of the
// primary h now: once the Lease has been silent for 3/10 of its duration
// (renewals come every 2/10), or at once when its WAL receiver lost h, from
// which it streamed a moment ago.
func seekProof(silent, lease time.Duration, following, h string, receiving bool, sinceReceived time.Duration) bool {
	return silent > lease*3/10 || (following == h && !receiving && sinceReceived < lease)
}

// provenDeath is a proof that holder, which held the Lease at version, is
// gone.
type provenDeath struct {
	holder, version, why string
}

// deathOf is the proof that h, the holder of lease, is gone, or "": the one
// found before on the same version of the Lease (only a write changes it,
// and the dead renew nothing), else a new one when seekProof says to look.
// Remembered, it keeps holding once the replica stopped following h for the
// election, which ends the WAL receiver's loss that made it look early.
func (m *Manager) deathOf(ctx context.Context, cfg *pgcontract.Config, h string, lease *coordv1.Lease, silent time.Duration) string {
	m.mu.Lock()
	proven, following, receiving, sinceReceived := m.proven, m.following, m.obs.Receiving, time.Since(m.receiving)
	m.mu.Unlock()
	if proven.holder == h && proven.version == lease.ResourceVersion {
		return proven.why
	}
	if !seekProof(silent, cfg.LeaseDuration.Duration, following, h, receiving, sinceReceived) {
		return ""
	}
	why := m.proofOfDeath(ctx, cfg, h, lease)
	if why != "" {
		m.mu.Lock()
		m.proven = provenDeath{holder: h, version: lease.ResourceVersion, why: why}
		m.mu.Unlock()
	}
	return why
}

// proofOfDeath is why the primary h is certainly gone, or "": its pod is
// gone; or its pod's address answers but both its manager and postgres
// ports refuse connections; or its pod's manager answers as another run than
// the one that holds the Lease.
func (m *Manager) proofOfDeath(ctx context.Context, cfg *pgcontract.Config, h string, lease *coordv1.Lease) string {
	ip, err := m.podIP(ctx, h, true)
	if errors.Is(err, errNoPod) {
		return "the primary's pod is gone"
	}
	if err != nil || ip == "" {
		return ""
	}
	answered := 0
	for _, port := range []int{pgcontract.ManagerPort, cfg.Port} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 300*time.Millisecond)
		if err == nil {
			c.Close()
			answered = port
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return "" // silence proves nothing
		}
	}
	if answered == 0 {
		return "the primary's manager and postgres ports refuse connections"
	}
	return m.restartedHolder(ctx, h, ip, lease)
}

// restartedHolder is the proof that the manager answering at h's address is
// not the run that holds the Lease, in the same pod; or "".
func (m *Manager) restartedHolder(ctx context.Context, h, ip string, lease *coordv1.Lease) string {
	if lease == nil {
		return ""
	}
	uid, run, ok := strings.Cut(lease.Annotations[annotationHolderRun], "/")
	if !ok || uid == "" || run == "" || string(m.podUIDs[h]) != uid {
		return ""
	}
	st, err := fetchStatus(ctx, &http.Client{Timeout: 500 * time.Millisecond}, ip)
	if err != nil || st.Instance != h || st.Incarnation == "" || st.Incarnation == run {
		return ""
	}
	return fmt.Sprintf("the primary's container restarted: its manager answers as run %s, the lease was held by run %s", st.Incarnation, run)
}
