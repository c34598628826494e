package pginstance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// An instance follows MajorFile to the new major's directory and
// binaries, whatever --pgdata its pod was made with.
func TestTheDataDirectoryFollowsTheUpgrade(t *testing.T) {
	root := t.TempDir()
	bins := filepath.Join(root, "lib")
	touch(t, filepath.Join(bins, "15", "bin", "postgres"))
	touch(t, filepath.Join(bins, "17", "bin", "postgres"))
	globs := []string{filepath.Join(bins, "*", "bin")}
	data := filepath.Join(root, "pgdata")

	o := Options{PGDATA: filepath.Join(data, "pg15"), BinDirGlobs: globs}
	if err := o.resolveData(); err != nil || o.PGDATA != filepath.Join(data, "pg15") || o.BinDir != filepath.Join(bins, "15", "bin") {
		t.Fatalf("before an upgrade: %s with %s (%v)", o.PGDATA, o.BinDir, err)
	}
	touch(t, filepath.Join(data, pgcontract.MajorFile))
	if err := os.WriteFile(filepath.Join(data, pgcontract.MajorFile), []byte("17\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o = Options{PGDATA: filepath.Join(data, "pg15"), BinDir: filepath.Join(bins, "15", "bin"), BinDirGlobs: globs}
	if err := o.resolveData(); err != nil || o.PGDATA != filepath.Join(data, "pg17") || o.BinDir != filepath.Join(bins, "17", "bin") {
		t.Fatalf("after an upgrade to 17: %s with %s (%v)", o.PGDATA, o.BinDir, err)
	}
}

// pg_upgrade --link renames the old global/pg_control as linking starts:
// put back while the new server has not run on the linked files (no
// delete_old_cluster.sh yet), and never after.
func TestPGControlIsPutBackOnlyBeforeTheNewServerRan(t *testing.T) {
	data := filepath.Join(t.TempDir(), "pgdata")
	old := filepath.Join(data, "pg15")
	ctl := filepath.Join(old, "global", "pg_control")
	touch(t, ctl+".old")
	o := Options{PGDATA: old, BinDir: "/unused"}
	if err := o.resolveData(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ctl); err != nil {
		t.Fatalf("pg_control was not put back: %v", err)
	}

	if err := os.Rename(ctl, ctl+".old"); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(data, deleteScript))
	if err := o.resolveData(); err == nil {
		t.Fatal("the old data would start after the new server ran on its linked files")
	}
	if _, err := os.Stat(ctl); !os.IsNotExist(err) {
		t.Fatalf("pg_control was put back after the new server ran: %v", err)
	}
}
