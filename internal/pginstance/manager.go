package pginstance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Manager runs one instance.
type Manager struct {
	o        Options
	log      *slog.Logger
	k        *kube
	pg       *postgres
	cfgw     *configWatch
	leaseCh  chan struct{} // a Lease change wakes the loop
	br       *backrest
	bk       backupState
	ipr      inPlace
	password string

	conn *pgx.Conn // to the local postgres, over the socket; loop only

	// leaseMu serialises this manager's writes of the Lease.
	leaseMu sync.Mutex

	mu         sync.Mutex
	status     pgcontract.Status
	obs        observation
	up         bool
	role       string // pgcontract.RolePrimary, RoleReplica or ""
	lease      *coordv1.Lease
	leaseSeen  time.Time // when the Lease last changed, by this clock
	lastRenew  time.Time // the primary: start of its last successful renewal
	fenced     bool
	needRewind bool // the data may hold WAL the primary does not: rewind before following
	// fencedHolder: this instance fenced itself as primary and the Lease
	// may still name it; it gives the Lease up rather than wait for a
	// handover that will never come (alone, it would wait forever).
	fencedHolder bool
	// offline: this primary stopped postgres for work it must finish
	// under the Lease: an in-place restore (until the Lease records it,
	// postgres is stopped, replaying, or promoted without the primary
	// label) or a major upgrade's pg_upgrade. It acknowledges no write the
	// Lease guards, so a renewal that stalls does not fence it; the
	// replicas ask its manager before they stand for election.
	offline     bool
	following   string // the instance postgres streams from
	followSince time.Time
	receiving   time.Time // a standby's WAL receiver last seen streaming
	lostSince   time.Time // when the primary was first seen lost
	appliedSync syncSet
	pendingSync *syncSet
	labelled    string
	usersGen    int64
	confGen     int64
	// obsGen is the configuration generation the last observation of
	// postgres was made with (Status.AppliedGeneration).
	obsGen   int64
	cfg      *pgcontract.Config
	podIPs   map[string]string
	podUIDs  map[string]types.UID
	podsRead time.Time
	// upg is this instance's part in a major upgrade (upgrade.go).
	upg upgradeState
	// incarnation is this run's id; selfUID the UID of its own pod (from
	// the pod list): the primary records both in the Lease (death.go).
	incarnation string
	selfUID     types.UID
	// proven is the last proof of death found, for the Lease it was
	// found on.
	proven provenDeath
}

// NewManager checks the options and connects to the API.
func NewManager(o Options, log *slog.Logger) (*Manager, error) {
	o.Defaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := o.resolveData(); err != nil {
		return nil, err
	}
	cs, err := NewKubeClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rn, err := newRunner(o.BinDir, o.PostgresUser, []string{"LC_ALL=C"}, newReaper(), os.Stderr)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		o:       o,
		log:     log.With("instance", o.PodName),
		k:       &kube{cs: cs, ns: o.Namespace, cluster: o.Cluster, pod: o.PodName},
		pg:      &postgres{pgdata: o.PGDATA, socketDir: o.SocketDir, rn: rn},
		cfgw:    &configWatch{changed: make(chan struct{}, 1)},
		leaseCh: make(chan struct{}, 1),
		podIPs:  map[string]string{},
		podUIDs: map[string]types.UID{},
	}
	m.incarnation = newIncarnation()
	if m.br, err = newBackrest(o, rn); err != nil {
		return nil, err
	}
	m.status.Instance = o.PodName
	return m, nil
}

// NewKubeClient is the client of a pod's own program (the instance manager,
// the pooler): from kubeconfig, else in-cluster; every call bounded to 2 s.
func NewKubeClient(kubeconfig string) (*kubernetes.Clientset, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	rc.Timeout = 2 * time.Second
	return kubernetes.NewForConfig(rc)
}

// Run runs the instance until ctx ends or a signal asks it to stop; postgres
// is shut down fast on the way out.
func (m *Manager) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		select {
		case s := <-sigs:
			m.log.Info("Shutting down", "signal", s.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	defer m.pg.stop(syscall.SIGINT, 20*time.Second)

	pw, err := os.ReadFile(filepath.Join(m.o.SecretsDir, pgcontract.ReplicationPasswordFile))
	if err != nil {
		return fmt.Errorf("replication password: %w", err)
	}
	m.password = strings.TrimSpace(string(pw))
	if err := m.pg.prepare(m.o.TLSDir, m.password); err != nil {
		return err
	}
	if err := m.br.prepare(); err != nil {
		return err
	}
	srv, err := m.serve()
	if err != nil {
		return err
	}
	defer srv.Close()
	go m.k.watchConfig(ctx, m.cfgw)
	go m.k.watchLease(ctx, m.leaseCh)
	go m.renewLoop(ctx)

	cfg, err := m.waitConfig(ctx)
	if err != nil {
		return err
	}
	m.pg.port = cfg.Port
	if err := m.bootstrap(ctx, cfg); err != nil {
		return err
	}
	tick := time.NewTicker(m.o.Tick)
	defer tick.Stop()
	for {
		if err := m.step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-m.cfgw.changed:
		case <-m.leaseCh:
		}
	}
}

func (m *Manager) waitConfig(ctx context.Context) (*pgcontract.Config, error) {
	m.setState("Initializing", "waiting for the config Secret")
	for {
		cfg, err := m.cfgw.get()
		if cfg != nil {
			if cfg.Port == 0 {
				cfg.Port = 5432
			}
			if cfg.LeaseDuration.Duration == 0 {
				cfg.LeaseDuration.Duration = 5 * time.Second
			}
			return cfg, nil
		}
		if err != nil {
			m.setState("Initializing", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.cfgw.changed:
		case <-time.After(time.Second):
		}
	}
}

// config is the latest Config with its defaults.
func (m *Manager) config() *pgcontract.Config {
	cfg, _ := m.cfgw.get()
	c := *cfg
	c.Port = m.pg.port
	if c.LeaseDuration.Duration == 0 {
		c.LeaseDuration.Duration = 5 * time.Second
	}
	return &c
}

// bootstrap brings the data directory and postgres up: initdb when this
// instance takes the Lease of a cluster that has none, a clone of the
// primary when another holds it, and otherwise the data that is there,
// started as a standby. A restarted instance never starts as primary: if
// it still holds the Lease it gives it up, and the election decides.
func (m *Manager) bootstrap(ctx context.Context, cfg *pgcontract.Config) error {
	for ctx.Err() == nil {
		lease, err := m.readLease(ctx)
		if err != nil {
			m.setState("Initializing", "read lease: "+err.Error())
			sleep(ctx, time.Second)
			continue
		}
		h := holder(lease)
		if !m.pg.hasData() {
			switch {
			case lease == nil:
				if cfg.Restore != nil {
					if err := m.checkRestore(cfg); err != nil {
						cfg = m.restoreFailed(ctx, cfg, err)
						continue
					}
				}
				err := m.initPrimary(ctx, cfg)
				if apierrors.IsAlreadyExists(err) {
					continue // another instance was first: clone it
				}
				if errors.Is(err, errRestore) {
					cfg = m.restoreFailed(ctx, cfg, err)
					continue
				}
				return err
			case h == "" || h == m.o.PodName:
				m.setState("Initializing", "no data here and no primary to clone from")
			default:
				ip, err := m.podIP(ctx, h, true)
				if err == nil {
					m.setState("Cloning", "pg_basebackup from "+h)
					if err = m.pg.basebackup(ip, cfg.Port, m.o.PodName); err == nil {
						m.noteRestored(lease.Annotations[annotationRestored])
						return m.startStandby(cfg, h, ip)
					}
				}
				m.setState("Cloning", fmt.Sprintf("clone from %s: %v", h, err))
			}
			sleep(ctx, time.Second)
			continue
		}
		state, err := m.pg.clusterState()
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.needRewind = wasPrimary(state)
		m.mu.Unlock()
		if h == m.o.PodName {
			m.log.Info("Restarted while holding the lease: giving it up; the election decides who is primary")
			lease.Spec.HolderIdentity = nil
			setAnnotation(lease, annotationReleasedBy, m.o.PodName)
			if _, err := m.k.updateLease(ctx, lease); err != nil {
				m.setState("Initializing", "release lease: "+err.Error())
				sleep(ctx, time.Second)
				continue
			}
		}
		return m.startStandby(cfg, "", "")
	}
	return ctx.Err()
}

// initPrimary runs initdb under a Lease this instance just created.
func (m *Manager) initPrimary(ctx context.Context, cfg *pgcontract.Config) error {
	lease, err := m.k.createLease(ctx, cfg.LeaseDuration.Duration)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.lease, m.leaseSeen, m.lastRenew = lease, time.Now(), time.Now()
	m.role = pgcontract.RolePrimary
	m.mu.Unlock()
	if cfg.Restore != nil {
		return m.restorePrimary(ctx, cfg)
	}
	m.setState("Initializing", "initdb")
	if err := m.pg.initdb(); err != nil {
		return err
	}
	if err := m.startAsPrimary(ctx, cfg); err != nil {
		return err
	}
	if err := ensureReplicationUser(ctx, m.conn, m.password); err != nil {
		return err
	}
	m.log.Info("Initialized the cluster as its first primary")
	return nil
}

// startStandby starts postgres as a standby of the instance at ip, or of
// nobody when primary is empty.
func (m *Manager) startStandby(cfg *pgcontract.Config, primary, ip string) error {
	if err := m.pg.writeConfig(m.confInput(cfg, primary, ip), true); err != nil {
		return err
	}
	if err := m.pg.start(); err != nil {
		return err
	}
	m.confGen = cfg.Generation
	m.mu.Lock()
	m.role, m.following, m.followSince = "", primary, time.Now()
	m.mu.Unlock()
	m.setState("Running", "")
	return nil
}

// confInput is lookout.conf for following primary (at ip), or for no one.
func (m *Manager) confInput(cfg *pgcontract.Config, primary, ip string) confInput {
	in := confInput{
		Generation: cfg.Generation, Parameters: cfg.Parameters, Port: cfg.Port, SocketDir: m.o.SocketDir, Instance: m.o.PodName, TLS: m.pg.tls,
	}
	m.mu.Lock()
	in.Archive = m.br.archiveParameters(cfg)
	if cfg.Backups != nil {
		in.BackRestPath = m.br.confPath()
		in.BackRest = renderBackRestConf(cfg.Backups.Stanza, cfg.Backups.Repos, cfg.Backups.Global, m.br.lockDir(),
			m.o.PGDATA, m.o.SocketDir, cfg.Port)
	}
	in.SyncSet = m.appliedSync
	if m.pendingSync != nil {
		in.SyncSet = *m.pendingSync
	}
	m.mu.Unlock()
	if primary != "" {
		in.Follow = conninfo(ip, cfg.Port, m.o.PodName, m.pg.passfile, m.pg.tls)
		in.SlotName = slotName(m.o.PodName)
	}
	return in
}

// connect (re)opens the manager's connection to its postgres, waiting until
// postgres accepts connections or exits.
func (m *Manager) connect(ctx context.Context) error {
	if m.conn != nil && !m.conn.IsClosed() {
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := m.pg.connect(ctx)
		if err == nil {
			m.conn = c
			return nil
		}
		if m.pg.running() == nil {
			return fmt.Errorf("postgres is not running: %w", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres does not accept connections: %w", err)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// startAsPrimary writes the configuration of a primary for cfg, starts
// postgres on the data directory and connects to it: after initdb, a
// restore or pg_upgrade.
func (m *Manager) startAsPrimary(ctx context.Context, cfg *pgcontract.Config) error {
	if err := m.pg.writeConfig(m.confInput(cfg, "", ""), false); err != nil {
		return err
	}
	if err := m.pg.start(); err != nil {
		return err
	}
	return m.connect(ctx)
}

// readLease reads the Lease and notes when it last changed.
func (m *Manager) readLease(ctx context.Context) (*coordv1.Lease, error) {
	l, err := m.k.getLease(ctx)
	if err != nil {
		return nil, err
	}
	m.noteLease(l)
	return l, nil
}

func (m *Manager) noteLease(l *coordv1.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l == nil || m.lease == nil || l.ResourceVersion != m.lease.ResourceVersion {
		m.leaseSeen = time.Now()
	}
	m.lease = l
}

// writeLease renews the Lease this instance holds, with change applied;
// it fails when another instance holds it.
func (m *Manager) writeLease(ctx context.Context, change func(*coordv1.Lease)) error {
	m.leaseMu.Lock()
	defer m.leaseMu.Unlock()
	m.mu.Lock()
	cur := m.lease
	m.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if cur == nil || holder(cur) != m.o.PodName {
			return errLeaseLost
		}
		started := time.Now()
		next := cur.DeepCopy()
		now := metavMicro(started)
		next.Spec.RenewTime = &now
		if run := m.holderRun(); run != "" {
			setAnnotation(next, annotationHolderRun, run)
		}
		if change != nil {
			change(next)
		}
		updated, err := m.k.updateLease(ctx, next)
		if err == nil {
			m.noteLease(updated)
			m.mu.Lock()
			if m.role == pgcontract.RolePrimary {
				m.lastRenew = started
			}
			m.mu.Unlock()
			return nil
		}
		if cur, err = m.readLease(ctx); err != nil {
			return err
		}
	}
	return errors.New("lease changed twice while renewing")
}

var errLeaseLost = errors.New("another instance holds the lease")

// renewLoop renews the Lease while this instance is primary and fences
// postgres when it could not for longer than the renew deadline: before
// the Lease can expire in the eyes of the replicas, no write is accepted.
func (m *Manager) renewLoop(ctx context.Context) {
	for ctx.Err() == nil {
		cfg, _ := m.cfgw.get()
		dur := 5 * time.Second
		if cfg != nil && cfg.LeaseDuration.Duration > 0 {
			dur = cfg.LeaseDuration.Duration
		}
		period, deadline := dur/5, dur*3/5
		m.mu.Lock()
		primary, last := m.role == pgcontract.RolePrimary, m.lastRenew
		m.mu.Unlock()
		if !primary {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if time.Since(last) >= period {
			rctx, cancel := context.WithTimeout(ctx, deadline-time.Since(last))
			var pos string
			m.mu.Lock()
			pos = formatLSN(m.obs.position())
			m.mu.Unlock()
			err := m.writeLease(rctx, func(l *coordv1.Lease) { setAnnotation(l, annotationLSN, pos) })
			cancel()
			if errors.Is(err, errLeaseLost) {
				m.fence("another instance holds the lease")
				continue
			}
			if err != nil {
				m.log.Warn("Could not renew the lease", "err", err)
			}
		}
		m.mu.Lock()
		last = m.lastRenew
		m.mu.Unlock()
		if time.Since(last) > deadline && !m.isOffline() {
			m.fence(fmt.Sprintf("could not renew the lease for %s", time.Since(last).Round(time.Millisecond)))
			continue
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// fence stops a primary that may no longer be one at once (immediate
// shutdown: no write is acknowledged after this returns); it comes back as
// a standby after a rewind against whoever holds the Lease.
func (m *Manager) fence(reason string) {
	m.mu.Lock()
	if m.role != pgcontract.RolePrimary {
		m.mu.Unlock()
		return
	}
	m.role, m.fenced, m.needRewind, m.following, m.fencedHolder = "", true, true, "", true
	m.appliedSync, m.pendingSync = syncSet{}, nil
	m.mu.Unlock()
	m.log.Warn("Fencing: stopping postgres immediately", "reason", reason)
	m.pg.stop(syscall.SIGQUIT, 0)
	m.setState("Demoting", "fenced: "+reason)
}

func (m *Manager) setState(state, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.status.State != state || m.status.Reason != reason {
		m.log.Info("State", "state", state, "reason", reason)
	}
	m.status.State, m.status.Reason = state, reason
}
