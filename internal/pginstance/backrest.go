package pginstance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// defaultArchiveTimeout bounds how long a written WAL record waits to be
// archived when little is written: a segment is switched after it at the
// latest, so the archive lags by less than a minute (this plus the push).
const defaultArchiveTimeout = "30s"

// backrest runs pgBackRest for one instance: its option file (in the
// manager's private directory), and the commands the manager runs with it.
type backrest struct {
	rn *runner // pgbackrest's directory, as the postgres user
	// bin is pgbackrest's absolute path, for archive_command.
	bin string
	// dir holds pgbackrest.conf, restore.conf and the lock directory.
	dir string
	// confDir and restoreConfDir hold the option files with the
	// repositories' credentials (pgcontract.BackupConfDir, RestoreConfDir).
	confDir, restoreConfDir string
}

func (b *backrest) confPath() string        { return filepath.Join(b.dir, "pgbackrest.conf") }
func (b *backrest) restoreConfPath() string { return filepath.Join(b.dir, "pgbackrest-restore.conf") }

// renderBackRestConf is the option file of a cluster's repositories and of
// this instance's data directory under the stanza.
func renderBackRestConf(stanza string, repos []pgcontract.Repo, global map[string]string, lockDir, pgdata, socketDir string, port int) string {
	var b strings.Builder
	b.WriteString("# Written by the Lookout instance manager; edits are lost.\n[global]\n")
	set := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	set("lock-path", lockDir)
	// The spool (pgBackRest's default /var/spool/pgbackrest) is the
	// manager's own: the image's may belong to another uid than the pod's,
	// and a restore lists it.
	set("spool-path", spoolDir(lockDir))
	set("log-level-file", "off")
	set("log-level-console", "info")
	set("start-fast", "y")
	set("delta", "y")
	for _, r := range repos {
		path := r.Path
		if path == "" {
			path = "/pgbackrest/" + r.Name
		}
		set(r.Name+"-path", path)
		if s := r.S3; s != nil {
			set(r.Name+"-type", "s3")
			set(r.Name+"-s3-bucket", s.Bucket)
			set(r.Name+"-s3-endpoint", s.Endpoint)
			set(r.Name+"-s3-region", s.Region)
			if s.Port != 0 {
				set(r.Name+"-storage-port", fmt.Sprint(s.Port))
			}
			if s.URIStyle != "" {
				set(r.Name+"-s3-uri-style", s.URIStyle)
			}
			if s.CAFile != "" {
				set(r.Name+"-storage-ca-file", s.CAFile)
			}
		} else {
			set(r.Name+"-type", "posix")
		}
	}
	keys := make([]string, 0, len(global))
	for k := range global {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, global[k])
	}
	fmt.Fprintf(&b, "\n[%s]\n", stanza)
	set("pg1-path", pgdata)
	set("pg1-port", fmt.Sprint(port))
	set("pg1-socket-path", socketDir)
	set("pg1-user", "postgres")
	return b.String()
}

func (b *backrest) lockDir() string { return filepath.Join(b.dir, "pgbackrest-lock") }

// spoolDir is the spool directory beside the lock directory.
func spoolDir(lockDir string) string { return filepath.Join(filepath.Dir(lockDir), "pgbackrest-spool") }

// prepare makes the lock and spool directories pgBackRest's commands share.
func (b *backrest) prepare() error {
	for _, d := range []string{b.lockDir(), spoolDir(b.lockDir())} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := b.rn.chown(d); err != nil {
			return err
		}
	}
	return nil
}

// args are the options every command against the cluster's repositories
// takes.
func (b *backrest) args(stanza string) []string {
	return []string{"--config=" + b.confPath(), "--config-include-path=" + b.confDir, "--stanza=" + stanza}
}

// archiveParameters are archive_mode, archive_command and archive_timeout
// for a cluster with backups. archive_mode is on, not always: pgBackRest
// refuses to back up a cluster archiving from its standbys. A primary that
// is lost with segments not yet archived pushes them when it comes back
// (pushPending), before it rewinds.
func (b *backrest) archiveParameters(cfg *pgcontract.Config) map[string]string {
	if cfg.Backups == nil {
		return map[string]string{"archive_mode": "off"}
	}
	cmd := append([]string{b.bin}, b.args(cfg.Backups.Stanza)...)
	p := map[string]string{
		"archive_mode":    "on",
		"archive_command": strings.Join(cmd, " ") + ` archive-push "%p"`,
	}
	if _, ok := cfg.Parameters["archive_timeout"]; !ok {
		p["archive_timeout"] = defaultArchiveTimeout
	}
	return p
}

// run runs pgbackrest; its error is pgBackRest's own ERROR lines.
func (b *backrest) run(args ...string) (string, error) {
	out, err := b.rn.run(filepath.Base(b.bin), args...)
	if err != nil {
		if msg := backrestErrors(out); msg != "" {
			return out, fmt.Errorf("pgbackrest %s: %s", args[len(args)-1], msg)
		}
	}
	return out, err
}

// backrestErrors are the ERROR lines of pgBackRest's output with the lines
// that continue them, in one line.
func backrestErrors(out string) string {
	var msg []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "ERROR:"):
			in = true
			msg = append(msg, strings.TrimSpace(line))
		case in && strings.HasPrefix(line, " "):
			msg = append(msg, strings.TrimSpace(line))
		default:
			in = false
		}
	}
	return strings.Join(msg, " ")
}

// stanzaCreate creates the stanza in every repository; it succeeds when it
// exists already for this database.
func (b *backrest) stanzaCreate(stanza string) error {
	_, err := b.run(append(b.args(stanza), "stanza-create")...)
	return err
}

// backup runs one backup and reads what the repository says of it.
func (b *backrest) backup(stanza string, req pgcontract.BackupRequest) pgcontract.BackupResult {
	res := pgcontract.BackupResult{Repo: req.Repo, Type: req.Type, Start: time.Now()}
	repo := strings.TrimPrefix(req.Repo, "repo")
	_, err := b.run(append(b.args(stanza), "backup", "--type="+req.Type, "--repo="+repo)...)
	res.Duration.Duration = time.Since(res.Start)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	infos, err := b.info(stanza, repo)
	if err != nil {
		res.Error = "backup done; info: " + err.Error()
		return res
	}
	if n := len(infos); n > 0 && len(infos[0].Backup) > 0 {
		last := infos[0].Backup[len(infos[0].Backup)-1]
		res.Label, res.Size, res.RepoSize = last.Label, last.Info.Size, last.Info.Repository.Delta
	}
	return res
}

// stanzaInfo is what `pgbackrest info --output=json` says of one stanza.
type stanzaInfo struct {
	Name   string `json:"name"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
	// Repo is each repository's status of the stanza: why it could not
	// be read.
	Repo []struct {
		Key    int `json:"key"`
		Status struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"repo"`
	Backup []struct {
		Label     string `json:"label"`
		Type      string `json:"type"`
		Timestamp struct {
			Start int64 `json:"start"`
			Stop  int64 `json:"stop"`
		} `json:"timestamp"`
		Info struct {
			Size       int64 `json:"size"`
			Repository struct {
				Delta int64 `json:"delta"`
			} `json:"repository"`
		} `json:"info"`
	} `json:"backup"`
}

func (b *backrest) info(stanza, repo string, extra ...string) ([]stanzaInfo, error) {
	args := append(b.args(stanza), extra...)
	if repo != "" {
		args = append(args, "--repo="+repo)
	}
	out, err := b.run(append(args, "info", "--output=json", "--log-level-console=warn")...)
	if err != nil {
		return nil, err
	}
	return parseInfo(out)
}

func parseInfo(out string) ([]stanzaInfo, error) {
	var infos []stanzaInfo
	start := strings.Index(out, "[")
	if start < 0 {
		return nil, fmt.Errorf("pgbackrest info printed no JSON: %s", lastLines(out, 3))
	}
	if err := json.Unmarshal([]byte(out[start:]), &infos); err != nil {
		return nil, fmt.Errorf("read pgbackrest info: %w", err)
	}
	return infos, nil
}

// pushPending archives the WAL segments a stopped former primary had not
// archived yet (pg_wal/archive_status/*.ready), before pg_rewind and
// streaming replace its history: the repository then holds every segment it
// wrote. A segment the repository already holds with the same contents is
// no error; one it holds with other contents is a segment of a history the
// cluster left, and is logged and marked done rather than retried forever.
func (b *backrest) pushPending(stanza, pgdata string, warn func(msg string, args ...any)) {
	status := filepath.Join(pgdata, "pg_wal", "archive_status")
	ready, _ := filepath.Glob(filepath.Join(status, "*.ready"))
	sort.Strings(ready)
	for _, r := range ready {
		seg := strings.TrimSuffix(filepath.Base(r), ".ready")
		out, err := b.run(append(b.args(stanza), "archive-push", filepath.Join(pgdata, "pg_wal", seg))...)
		if err != nil {
			if !strings.Contains(out, "already exists") {
				warn("Could not archive a pending WAL segment; it stays pending", "segment", seg, "err", err)
				return
			}
			warn("The repository holds another version of a pending WAL segment; keeping the repository's", "segment", seg)
		}
		_ = os.Rename(r, strings.TrimSuffix(r, ".ready")+".done")
	}
}

// archiveOldTimeline makes a new primary archive the segments of the
// timeline it left that it holds complete: as a standby it marked them
// done on receipt, and the former primary may have been lost before it
// archived them. The repository keeps a segment it holds with the same
// contents, so pushing one again costs a listing.
func archiveOldTimeline(pgdata string) int {
	status := filepath.Join(pgdata, "pg_wal", "archive_status")
	done, _ := filepath.Glob(filepath.Join(status, "*.done"))
	var newest string
	segs := map[string]string{}
	for _, d := range done {
		seg := strings.TrimSuffix(filepath.Base(d), ".done")
		if len(seg) != 24 || strings.Trim(seg, "0123456789ABCDEF") != "" {
			continue // a history file or a partial segment
		}
		segs[d] = seg
	}
	names, _ := filepath.Glob(filepath.Join(pgdata, "pg_wal", "*"))
	for _, n := range names {
		if base := filepath.Base(n); len(base) >= 8 && strings.Trim(base[:8], "0123456789ABCDEF") == "" && base[:8] > newest {
			newest = base[:8]
		}
	}
	marked := 0
	for d, seg := range segs {
		if seg[:8] < newest {
			if os.Rename(d, strings.TrimSuffix(d, ".done")+".ready") == nil {
				marked++
			}
		}
	}
	return marked
}
