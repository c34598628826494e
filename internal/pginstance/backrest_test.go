package pginstance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

func TestArchiveSettingsFollowTheBackups(t *testing.T) {
	br := &backrest{bin: "/usr/bin/pgbackrest", dir: "/run/pg", confDir: "/etc/pgbackrest/conf.d"}
	s3 := pgcontract.Repo{Name: "repo1", S3: &pgcontract.S3{Bucket: "b", Endpoint: "10.0.0.1", Port: 9000, Region: "eu", CAFile: "/ca.crt", URIStyle: "path"}}
	vol := pgcontract.Repo{Name: "repo2", Volume: &pgcontract.Volume{}, Path: "/repo2"}
	tests := []struct {
		name   string
		cfg    pgcontract.Config
		want   []string
		absent []string
	}{
		{"a cluster without backups does not archive", pgcontract.Config{Parameters: map[string]string{"archive_command": "cp %p /x", "archive_mode": "on"}},
			[]string{"archive_mode = 'off'"}, []string{"archive_timeout"}},
		{"a cluster with backups archives with pgbackrest, within 30 s",
			pgcontract.Config{Backups: &pgcontract.Backups{Stanza: "db", Repos: []pgcontract.Repo{s3}}, Parameters: map[string]string{"archive_command": "cp %p /x"}},
			[]string{"archive_mode = 'on'",
				`archive_command = '/usr/bin/pgbackrest --config=/run/pg/pgbackrest.conf --config-include-path=/etc/pgbackrest/conf.d --stanza=db archive-push "%p"'`,
				"archive_timeout = '30s'"}, []string{"cp %p"}},
		{"the user's archive_timeout is kept", pgcontract.Config{Backups: &pgcontract.Backups{Stanza: "db", Repos: []pgcontract.Repo{vol}},
			Parameters: map[string]string{"archive_timeout": "10s"}}, []string{"archive_timeout = '10s'"}, []string{"'30s'"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf := renderConf(confInput{Parameters: tc.cfg.Parameters, Port: 5432, Archive: br.archiveParameters(&tc.cfg),
				BackRest: map[bool]string{true: "x"}[tc.cfg.Backups != nil]})
			for _, w := range tc.want {
				if !strings.Contains(conf, w) {
					t.Errorf("lookout.conf lacks %q:\n%s", w, conf)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(conf, a) {
					t.Errorf("lookout.conf has %q:\n%s", a, conf)
				}
			}
		})
	}

	got := renderBackRestConf("db", []pgcontract.Repo{s3, vol}, map[string]string{"repo1-retention-full": "2"}, "/run/pg/lock", "/pgdata/pg15", "/run/pg", 5432)
	for _, w := range []string{"repo1-type=s3\n", "repo1-path=/pgbackrest/repo1\n", "repo1-s3-bucket=b\n", "repo1-storage-port=9000\n",
		"repo1-storage-ca-file=/ca.crt\n", "repo1-s3-uri-style=path\n", "repo2-type=posix\n", "repo2-path=/repo2\n",
		"repo1-retention-full=2\n", "[db]\npg1-path=/pgdata/pg15\n"} {
		if !strings.Contains(got, w) {
			t.Errorf("pgbackrest.conf lacks %q:\n%s", w, got)
		}
	}
}

func TestANewPrimaryArchivesTheSegmentsOfTheTimelineItLeft(t *testing.T) {
	pgdata := t.TempDir()
	wal := filepath.Join(pgdata, "pg_wal")
	status := filepath.Join(wal, "archive_status")
	if err := os.MkdirAll(status, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"000000010000000000000003": "done", "000000010000000000000004": "done", "000000010000000000000005.partial": "done",
		"00000002.history": "done", "000000020000000000000005": "", "000000020000000000000006": "ready",
	}
	for name, st := range files {
		if err := os.WriteFile(filepath.Join(wal, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if st != "" {
			if err := os.WriteFile(filepath.Join(status, name+"."+st), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := archiveOldTimeline(pgdata); n != 2 {
		t.Errorf("marked %d segments, want 2", n)
	}
	ready, _ := filepath.Glob(filepath.Join(status, "*.ready"))
	var got []string
	for _, r := range ready {
		got = append(got, filepath.Base(r))
	}
	want := []string{"000000010000000000000003.ready", "000000010000000000000004.ready", "000000020000000000000006.ready"}
	if !slices.Equal(got, want) {
		t.Errorf("ready %v, want %v", got, want)
	}
}

// A time target is restorable from a backup that ended in an earlier whole
// second (pgBackRest records the end in seconds): one in the same second
// is refused with its own reason, as is one before the end.
func TestATargetTimeMustFollowTheFirstBackupsSecond(t *testing.T) {
	ended := time.Date(2026, 11, 29, 7, 17, 38, 0, time.UTC) // as pgbackrest info reports it
	for _, tc := range []struct {
		target time.Time
		want   string
	}{
		{ended.Add(-time.Minute), "is before the first backup"},
		{ended.Add(924468 * time.Microsecond), "is in the second the first backup"},
		{ended, "is in the second the first backup"},
		{ended.Add(time.Second), ""},
		{ended.Add(time.Hour), ""},
	} {
		err := targetAfterBackup(tc.target, "db", "20261129-071734F", ended)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("target %s: %v, want %q", tc.target.Format(time.RFC3339Nano), err, tc.want)
		}
	}
}
