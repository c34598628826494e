package pginstance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// backupState is what the manager knows of its stanza, archiving and the
// backups it ran. Its lock is taken after Manager.mu, never before.
type backupState struct {
	mu sync.Mutex
	// stanzaFor is the Backups (as JSON) stanza-create last succeeded for.
	stanzaFor  string
	stanzaErr  string
	stanzaAt   time.Time
	stanzaBusy bool
	running    bool
	archive    pgcontract.ArchiveStatus
	results    map[string]pgcontract.BackupResult // by repo/type
}

func newBackrest(o Options, rn *runner) (*backrest, error) {
	bin := o.PgBackRest
	if path, err := exec.LookPath(bin); err == nil {
		bin = path
	}
	if !filepath.IsAbs(bin) {
		// Missing: the commands fail when a cluster has backups, with the
		// program's name in the error.
		bin = filepath.Join("/usr/bin", bin)
	}
	brn := *rn
	brn.binDir = filepath.Dir(bin)
	return &backrest{rn: &brn, bin: bin, dir: o.SocketDir, confDir: o.BackRestConfDir, restoreConfDir: o.BackRestRestoreConfDir}, nil
}

// backupStep observes archiving and, on the primary, creates the stanza
// when the repositories changed (retrying every 10 s while it fails). It
// runs in the manager's loop, after look.
func (m *Manager) backupStep(ctx context.Context, cfg *pgcontract.Config, role string) {
	if cfg.Backups == nil {
		return
	}
	m.observeArchive(ctx)
	if role != pgcontract.RolePrimary {
		return
	}
	key, _ := json.Marshal(cfg.Backups)
	m.bk.mu.Lock()
	defer m.bk.mu.Unlock()
	if m.bk.stanzaFor == string(key) || m.bk.stanzaBusy || time.Since(m.bk.stanzaAt) < 10*time.Second {
		return
	}
	m.bk.stanzaBusy, m.bk.stanzaAt = true, time.Now()
	go func() {
		err := m.br.stanzaCreate(cfg.Backups.Stanza)
		m.bk.mu.Lock()
		defer m.bk.mu.Unlock()
		m.bk.stanzaBusy = false
		if err != nil {
			m.bk.stanzaErr = err.Error()
			m.log.Warn("Could not create the pgBackRest stanza", "stanza", cfg.Backups.Stanza, "err", err)
			return
		}
		m.bk.stanzaFor, m.bk.stanzaErr = string(key), ""
		m.log.Info("pgBackRest stanza ready", "stanza", cfg.Backups.Stanza)
	}()
}

// observeArchive reads pg_stat_archiver.
func (m *Manager) observeArchive(ctx context.Context) {
	if m.conn == nil || m.conn.IsClosed() {
		return
	}
	var a pgcontract.ArchiveStatus
	var archived, failed *string
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := m.conn.QueryRow(qctx, `SELECT last_archived_wal, last_archived_time, last_failed_wal, last_failed_time FROM pg_stat_archiver`).
		Scan(&archived, &a.LastArchivedTime, &failed, &a.LastFailedTime)
	if err != nil {
		return
	}
	a.LastArchivedWAL, a.LastFailedWAL = deref(archived), deref(failed)
	m.bk.mu.Lock()
	m.bk.archive.LastArchivedWAL, m.bk.archive.LastArchivedTime = a.LastArchivedWAL, a.LastArchivedTime
	m.bk.archive.LastFailedWAL, m.bk.archive.LastFailedTime = a.LastFailedWAL, a.LastFailedTime
	m.bk.mu.Unlock()
}

// backupStatus adds archiving and the last backups to st.
func (m *Manager) backupStatus(st *pgcontract.Status) {
	m.bk.mu.Lock()
	defer m.bk.mu.Unlock()
	if m.cfg == nil || m.cfg.Backups == nil {
		return
	}
	a := m.bk.archive
	a.StanzaReady, a.StanzaError = m.bk.stanzaFor != "", m.bk.stanzaErr
	st.Archive = &a
	st.Backups = st.Backups[:0]
	for _, r := range m.bk.results {
		st.Backups = append(st.Backups, r)
	}
	slices.SortFunc(st.Backups, func(a, b pgcontract.BackupResult) int {
		if c := cmpString(a.Repo, b.Repo); c != 0 {
			return c
		}
		return cmpString(a.Type, b.Type)
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// serveBackup runs a backup on request (PathBackup): only the primary
// takes backups, one at a time; the answer comes when it ended.
func (m *Manager) serveBackup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a BackupRequest", http.StatusMethodNotAllowed)
		return
	}
	var req pgcontract.BackupRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "read the backup request: "+err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	cfg, role := m.cfg, m.role
	m.mu.Unlock()
	if err := checkBackupRequest(cfg, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if role != pgcontract.RolePrimary {
		http.Error(w, m.o.PodName+" is not the primary; backups run on the primary", http.StatusConflict)
		return
	}
	m.bk.mu.Lock()
	if m.bk.running {
		m.bk.mu.Unlock()
		http.Error(w, "a backup is running already", http.StatusConflict)
		return
	}
	m.bk.running = true
	m.bk.mu.Unlock()
	m.log.Info("Backup", "repo", req.Repo, "type", req.Type)
	res := m.br.backup(cfg.Backups.Stanza, req)
	m.log.Info("Backup ended", "repo", req.Repo, "type", req.Type, "label", res.Label, "duration", res.Duration, "err", res.Error)
	m.bk.mu.Lock()
	m.bk.running = false
	if res.Error == "" {
		if m.bk.results == nil {
			m.bk.results = map[string]pgcontract.BackupResult{}
		}
		m.bk.results[req.Repo+"/"+req.Type] = res
	}
	m.bk.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if res.Error != "" {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_ = json.NewEncoder(w).Encode(res)
}

func checkBackupRequest(cfg *pgcontract.Config, req pgcontract.BackupRequest) error {
	if cfg == nil || cfg.Backups == nil {
		return fmt.Errorf("the cluster has no backups configured")
	}
	switch req.Type {
	case pgcontract.BackupFull, pgcontract.BackupDiff, pgcontract.BackupIncr:
	default:
		return fmt.Errorf("backup type %q: want %s, %s or %s", req.Type, pgcontract.BackupFull, pgcontract.BackupDiff, pgcontract.BackupIncr)
	}
	for _, r := range cfg.Backups.Repos {
		if r.Name == req.Repo {
			return nil
		}
	}
	return fmt.Errorf("repository %q is not one of the cluster's", req.Repo)
}

// RequestBackup asks the manager at baseURL ("http://10.0.0.5:8008") for a
// backup and waits for its result.
func RequestBackup(ctx context.Context, baseURL string, req pgcontract.BackupRequest) (pgcontract.BackupResult, error) {
	var res pgcontract.BackupResult
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+pgcontract.PathBackup, bytes.NewReader(body))
	if err != nil {
		return res, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return res, fmt.Errorf("request a %s backup of %s: %w", req.Type, req.Repo, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInternalServerError {
		return res, fmt.Errorf("request a %s backup of %s: %s: %s", req.Type, req.Repo, resp.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("read the backup result: %w", err)
	}
	if res.Error != "" {
		return res, fmt.Errorf("%s backup of %s: %s", req.Type, req.Repo, res.Error)
	}
	return res, nil
}

var (
	descArchived    = desc(pgcontract.MetricArchiveLastArchived, "When the last WAL segment was archived (pg_stat_archiver).")
	descArchiveFail = desc(pgcontract.MetricArchiveLastFailed, "When archiving last failed (pg_stat_archiver).")
	descStanza      = desc(pgcontract.MetricStanzaReady, "1 once the pgBackRest stanza exists in every repository (on the primary).")
	descBackupLast  = desc(pgcontract.MetricBackupLast, "When the last successful backup this instance ran ended.", "repo", "type")
	descBackupDur   = desc(pgcontract.MetricBackupLastDuration, "How long the last successful backup took.", "repo", "type")
	descBackupSize  = desc(pgcontract.MetricBackupLastSize, "Bytes the last successful backup wrote to the repository.", "repo", "type")
)

// backupCollector turns archiving and backups into metrics, for a cluster
// with backups.
type backupCollector struct{ m *Manager }

func (c *backupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descArchived, descArchiveFail, descStanza, descBackupLast, descBackupDur, descBackupSize} {
		ch <- d
	}
}

func (c *backupCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Status()
	if st.Archive == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if t := st.Archive.LastArchivedTime; t != nil {
		gauge(descArchived, float64(t.UnixNano())/1e9)
	}
	if t := st.Archive.LastFailedTime; t != nil {
		gauge(descArchiveFail, float64(t.UnixNano())/1e9)
	}
	if st.Role == pgcontract.RolePrimary {
		gauge(descStanza, b2f(st.Archive.StanzaReady))
	}
	for _, b := range st.Backups {
		gauge(descBackupLast, float64(b.Start.Add(b.Duration.Duration).UnixNano())/1e9, b.Repo, b.Type)
		gauge(descBackupDur, b.Duration.Seconds(), b.Repo, b.Type)
		gauge(descBackupSize, float64(b.RepoSize), b.Repo, b.Type)
	}
}
