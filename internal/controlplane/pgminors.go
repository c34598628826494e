package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// PostgresMinor is one release of Debian's postgresql-<major> (and its
// postgresql-client-<major>, which carries pg_basebackup and psql) unpacked
// into the cache, so that tests can run two minors of one major side by side
// whichever one the host has installed.
type PostgresMinor struct {
	Major int
	// Package is the Debian version ("15.20-0+deb12u1"); Minor the
	// PostgreSQL release it packages ("15.20").
	Package, Minor string
	// Root holds the packages' files as they would be installed: the bin
	// directory under usr/lib/postgresql/<major>/bin finds its share and lib
	// directories relative to itself (PostgreSQL is relocatable).
	Root string
}

// BinDir is where postgres, initdb, pg_basebackup and pg_rewind are.
func (m PostgresMinor) BinDir() string {
	return filepath.Join(m.Root, "usr", "lib", "postgresql", strconv.Itoa(m.Major), "bin")
}

// debianMinor is the PostgreSQL release of a Debian version: "15.20" of
// "15.20-0+deb12u1".
var debianMinor = regexp.MustCompile(`^(\d+)\.(\d+)-`)

// PostgresMinors are the releases of PostgreSQL <major> the package archive
// offers (`apt-cache madison postgresql-<major>`: typically the release's
// main suite and its security suite), oldest first, each downloaded with
// `apt-get download` by its exact version and unpacked with `dpkg-deb -x`
// into CacheDir()/postgresql/<version> on first use, then checked: every
// library its programs link is found, `postgres --version` names the
// release, and initdb makes a data directory with the unpacked share files.
func PostgresMinors(ctx context.Context, major int, log io.Writer) ([]PostgresMinor, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "madison", fmt.Sprintf("postgresql-%d", major)).Output()
	if err != nil {
		return nil, fmt.Errorf("list the archive's postgresql-%d versions (apt-cache madison): %w", major, err)
	}
	var minors []PostgresMinor
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 2 {
			continue
		}
		v := strings.TrimSpace(f[1])
		m := debianMinor.FindStringSubmatch(v)
		if m == nil || m[1] != strconv.Itoa(major) || slices.ContainsFunc(minors, func(p PostgresMinor) bool { return p.Package == v }) {
			continue
		}
		minors = append(minors, PostgresMinor{Major: major, Package: v, Minor: m[1] + "." + m[2],
			Root: filepath.Join(CacheDir(), "postgresql", v)})
	}
	slices.SortFunc(minors, func(a, b PostgresMinor) int { return minorNumber(a.Minor) - minorNumber(b.Minor) })
	for _, m := range minors {
		if err := m.ensure(ctx, log); err != nil {
			return nil, err
		}
	}
	return minors, nil
}

func minorNumber(v string) int {
	_, m, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(m)
	return n
}

// completeMark is written into Root once the release is unpacked and
// checked.
const completeMark = ".lookout-complete"

func (m PostgresMinor) ensure(ctx context.Context, log io.Writer) error {
	if _, err := os.Stat(filepath.Join(m.Root, completeMark)); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(m.Root), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(m.Root + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(m.Root, completeMark)); err == nil {
		return nil // unpacked by someone else while we waited
	}
	if log != nil {
		fmt.Fprintf(log, "fetching PostgreSQL %s (Debian %s) into %s\n", m.Minor, m.Package, m.Root)
	}
	dl, err := os.MkdirTemp(filepath.Dir(m.Root), "download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dl)
	// apt-get downloads as its sandbox user when it can write there, and
	// warns (harmlessly) when it cannot.
	_ = os.Chmod(dl, 0o777)
	pkgs := []string{fmt.Sprintf("postgresql-%d=%s", m.Major, m.Package), fmt.Sprintf("postgresql-client-%d=%s", m.Major, m.Package)}
	if err := runIn(ctx, dl, "apt-get", append([]string{"download", "-q"}, pkgs...)...); err != nil {
		return fmt.Errorf("download PostgreSQL %s: %w", m.Package, err)
	}
	debs, _ := filepath.Glob(filepath.Join(dl, "*.deb"))
	if len(debs) != 2 {
		return fmt.Errorf("download PostgreSQL %s: got %d packages, want postgresql and its client", m.Package, len(debs))
	}
	tmp := m.Root + ".tmp"
	_ = os.RemoveAll(tmp)
	for _, deb := range debs {
		if err := runIn(ctx, "", "dpkg-deb", "-x", deb, tmp); err != nil {
			return fmt.Errorf("unpack %s: %w", filepath.Base(deb), err)
		}
	}
	unpacked := m
	unpacked.Root = tmp
	if err := unpacked.check(ctx); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	_ = os.RemoveAll(m.Root)
	if err := os.Rename(tmp, m.Root); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m.Root, completeMark), []byte(m.Package+"\n"), 0o644)
}

// check runs the unpacked release's own checks: see PostgresMinors.
func (m PostgresMinor) check(ctx context.Context) error {
	bin := m.BinDir()
	for _, p := range []string{"postgres", "initdb", "pg_ctl", "pg_basebackup", "pg_rewind", "psql", "pgbench"} {
		out, err := exec.CommandContext(ctx, "ldd", filepath.Join(bin, p)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("PostgreSQL %s: ldd %s: %v\n%s", m.Package, p, err, out)
		}
		if bytes.Contains(out, []byte("not found")) {
			return fmt.Errorf("PostgreSQL %s: %s links a library this host lacks:\n%s", m.Package, p, out)
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " "+m.Minor+" ") {
		return fmt.Errorf("PostgreSQL %s: postgres --version says %q (%v), want %s", m.Package, strings.TrimSpace(string(out)), err, m.Minor)
	}
	// initdb refuses root: it runs as nobody, from a copy the user can
	// reach (the cache may sit in a home directory only root enters).
	dir, err := os.MkdirTemp("", "lookout-pgcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	placed, err := m.Place(filepath.Join(dir, "tree"))
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return err
	}
	if err := os.Chown(data, nobody, nobody); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(placed.BinDir(), "initdb"), "-D", data, "--no-sync", "-A", "trust", "-U", "postgres")
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("PostgreSQL %s: initdb with the unpacked share directory: %v\n%s", m.Package, err, tail(string(out), 20))
	}
	if v, err := os.ReadFile(filepath.Join(data, "PG_VERSION")); err != nil || strings.TrimSpace(string(v)) != strconv.Itoa(m.Major) {
		return fmt.Errorf("PostgreSQL %s: initdb wrote PG_VERSION %q (%v)", m.Package, v, err)
	}
	return nil
}

const nobody = 65534

// Place makes the release's files reachable by every user under dir (the
// instance pods run as their own uid, and the cache may be in a home only
// root enters): hard links where dir is on the cache's file system, a copy
// otherwise. dir's parent must be reachable; the placed release is returned.
func (m PostgresMinor) Place(dir string) (PostgresMinor, error) {
	placed := m
	placed.Root = dir
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return placed, err
	}
	if err := runIn(context.Background(), "", "cp", "-al", m.Root, dir); err != nil {
		_ = os.RemoveAll(dir)
		if err := runIn(context.Background(), "", "cp", "-a", m.Root, dir); err != nil {
			return placed, fmt.Errorf("place PostgreSQL %s at %s: %w", m.Package, dir, err)
		}
	}
	return placed, os.Chmod(dir, 0o755)
}

// SharedDir holds the releases Shared places: outside the home directory
// (which only root may enter) and outside /tmp (a pod's /tmp is a volume of
// its own), so that every pod's user reaches them at the same path.
const SharedDir = "/var/tmp/lookout-postgresql"

// Shared is the release placed (Place) under SharedDir, once: the instance
// pods of the local runs run its programs as their own user.
func (m PostgresMinor) Shared() (PostgresMinor, error) {
	placed := m
	placed.Root = filepath.Join(SharedDir, m.Package)
	if _, err := os.Stat(filepath.Join(placed.Root, completeMark)); err == nil {
		return placed, nil
	}
	if err := os.MkdirAll(SharedDir, 0o755); err != nil {
		return placed, err
	}
	if err := os.Chmod(SharedDir, 0o755); err != nil {
		return placed, err
	}
	unlock, err := lockFile(placed.Root + ".lock")
	if err != nil {
		return placed, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(placed.Root, completeMark)); err == nil {
		return placed, nil
	}
	_ = os.RemoveAll(placed.Root)
	if _, err := m.Place(placed.Root); err != nil {
		return placed, err
	}
	return placed, nil
}

func runIn(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(string(out), 20))
	}
	return nil
}
