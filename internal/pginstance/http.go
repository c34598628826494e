package pginstance

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// serve starts the manager's HTTP server: probes, metrics and status.
func (m *Manager) serve() (*http.Server, error) {
	l, err := net.Listen("tcp", m.o.Listen)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{m: m}, &backupCollector{m: m})
	mux := http.NewServeMux()
	mux.HandleFunc(pgcontract.PathLive, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc(pgcontract.PathReady, func(w http.ResponseWriter, _ *http.Request) {
		st := m.Status()
		if !st.Ready {
			http.Error(w, "not ready: "+st.State+" "+st.Reason, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc(pgcontract.PathStatus, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Status())
	})
	mux.HandleFunc(pgcontract.PathBackup, m.serveBackup)
	mux.Handle(pgcontract.PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

// Status is the pgcontract.Status this instance serves.
func (m *Manager) Status() pgcontract.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status
	o := m.obs
	st.Role = m.role
	if st.Role == "" && m.up && o.InRecovery && m.following != "" {
		st.Role = pgcontract.RoleReplica
	}
	st.Fenced = m.fenced
	st.Incarnation = m.incarnation
	st.Ready = m.up && ((st.Role == pgcontract.RolePrimary && !o.InRecovery) || (st.Role == pgcontract.RoleReplica && o.Receiving))
	if m.up {
		st.PostgresVersion, st.SystemIdentifier, st.Timeline = o.Version, o.SystemIdentifier, o.Timeline
		st.CurrentLSN, st.ReceivedLSN, st.ReplayedLSN, st.Streaming = o.CurrentLSN, o.ReceivedLSN, o.ReplayedLSN, o.Receiving
		st.PendingRestart = o.PendingRestart
		if st.Role == pgcontract.RolePrimary {
			st.Replicas = o.Replicas
		}
	}
	if st.Role == pgcontract.RolePrimary {
		st.SynchronousStandbys = m.appliedSync.Standbys
	}
	if m.up {
		st.AppliedGeneration = m.obsGen
	}
	if m.lease != nil {
		st.LastSwitchoverTrigger = m.lease.Annotations[annotationSwitchover]
		st.LastRestore = m.lease.Annotations[annotationRestored]
	}
	m.backupStatus(&st)
	return st
}

// collector turns the last observation into metrics at scrape time.
type collector struct{ m *Manager }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descUp              = desc(pgcontract.MetricUp, "1 while postgres answers the instance manager.")
	descRole            = desc(pgcontract.MetricRole, "The instance's role (master, replica, or empty while neither).", "role")
	descTimeline        = desc(pgcontract.MetricTimeline, "The timeline postgres is on.")
	descPosition        = desc(pgcontract.MetricWALPosition, "The WAL position: current on a primary, received or replayed on a replica.")
	descLagBytes        = desc(pgcontract.MetricReplicationLagBytes, "Bytes of WAL a replica has not flushed yet (on the primary).", "replica")
	descLagSeconds      = desc(pgcontract.MetricReplicationLagSeconds, "Seconds a replica's replay lags (on the primary).", "replica")
	descSync            = desc(pgcontract.MetricReplicaSync, "1 per replica with its sync state (on the primary).", "replica", "sync_state")
	descStreaming       = desc(pgcontract.MetricStreaming, "1 while a replica's WAL receiver streams.")
	descConnections     = desc(pgcontract.MetricConnections, "Client backends.")
	descMaxConnections  = desc(pgcontract.MetricMaxConnections, "max_connections.")
	descCommit          = desc(pgcontract.MetricXactCommit, "Transactions committed, all databases.")
	descRollback        = desc(pgcontract.MetricXactRollback, "Transactions rolled back, all databases.")
	descSyncStandbys    = desc(pgcontract.MetricSyncStandbys, "Standbys a commit waits for (0: asynchronous).")
	descFailoverBlocked = desc(pgcontract.MetricFailoverBlocked, "1 while this replica refuses to take over the lost primary.")
	descPendingRestart  = desc(pgcontract.MetricPendingRestart, "Parameters waiting for a restart.")
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descRole, descTimeline, descPosition, descLagBytes, descLagSeconds, descSync,
		descStreaming, descConnections, descMaxConnections, descCommit, descRollback, descSyncStandbys, descFailoverBlocked, descPendingRestart} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Status()
	c.m.mu.Lock()
	o, up, applied := c.m.obs, c.m.up, c.m.appliedSync
	c.m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descUp, b2f(up))
	gauge(descRole, 1, st.Role)
	gauge(descFailoverBlocked, b2f(st.FailoverBlocked != ""))
	if !up {
		return
	}
	gauge(descTimeline, float64(o.Timeline))
	gauge(descPosition, float64(o.position()))
	gauge(descStreaming, b2f(o.Receiving))
	gauge(descConnections, float64(o.Connections))
	gauge(descMaxConnections, float64(o.MaxConnections))
	ch <- prometheus.MustNewConstMetric(descCommit, prometheus.CounterValue, float64(o.XactCommit))
	ch <- prometheus.MustNewConstMetric(descRollback, prometheus.CounterValue, float64(o.XactRollback))
	gauge(descPendingRestart, float64(len(o.PendingRestart)))
	if st.Role == pgcontract.RolePrimary {
		gauge(descSyncStandbys, float64(applied.Count))
		for _, r := range o.Replicas {
			gauge(descLagBytes, float64(r.LagBytes), r.Instance)
			gauge(descLagSeconds, r.LagSeconds, r.Instance)
			gauge(descSync, 1, r.Instance, r.SyncState)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

func cutColon(line string) (string, string, bool) {
	k, v, ok := strings.Cut(line, ":")
	return strings.TrimSpace(k), strings.TrimSpace(v), ok
}
