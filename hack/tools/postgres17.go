package main

// PostgreSQL 17, for the major-upgrade tests (15 → 17). This machine's
// distribution (Debian 12) carries only 15, and its package mirror serves
// binary packages only (no source packages to build from). Debian 13's
// postgresql-17 needs glibc 2.38 (this host has 2.36), so it is installed
// with Debian 13's own C runtime beside it: the programs' ELF interpreter and
// library path (patchelf) point at a private copy of that release's libc6,
// libstdc++6, libgcc-s1, libicu76, libldap2 and libpq5, and nothing of the
// system's changes. docs/postgres-compatibility.md says why not the npm
// registry's embedded-postgres (no pg_upgrade, psql or pg_dump in it).
//
// The install goes under postgres17Root, not the cache: the instance pods
// run PostgreSQL as uid 26, which cannot enter root's home directory. The
// downloaded packages are kept in the cache.

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/controlplane"
)

const (
	postgres17Root  = "/opt/lookout-postgresql"
	postgres17Suite = "trixie"
)

// postgres17Packages are Debian 13's PostgreSQL 17 server and client
// programs and the libraries of theirs this host lacks or has too old.
var postgres17Packages = []string{"postgresql-17", "postgresql-client-17", "libpq5", "libc6", "libstdc++6", "libgcc-s1", "libicu76", "libldap2"}

// ensurePostgres17 installs PostgreSQL 17 unless its pg_upgrade runs
// already, and returns its bin directory.
func ensurePostgres17(ctx context.Context, log io.Writer) (string, error) {
	major := filepath.Join(postgres17Root, "lib", "postgresql", "17")
	bin := filepath.Join(major, "bin")
	if out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_upgrade"), "-V").Output(); err == nil && strings.Contains(string(out), " 17.") {
		return bin, nil
	}
	if runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("postgres17: only amd64 is provided for (this is %s)", runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("postgres17: installing into %s needs root", postgres17Root)
	}
	for _, p := range []string{"apt-get", "dpkg-deb", "patchelf"} {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("postgres17: %s is missing (.ci/run installs patchelf)", p)
		}
	}
	start := time.Now()
	fmt.Fprintf(log, "postgres17: installing Debian %s's PostgreSQL 17 into %s (a minute at most)\n", postgres17Suite, postgres17Root)
	mirror, err := debianMirror()
	if err != nil {
		return "", err
	}
	cache := filepath.Join(controlplane.CacheDir(), "postgresql-17")
	debs := filepath.Join(cache, "debs")
	for _, d := range []string{filepath.Join(cache, "lists", "partial"), filepath.Join(cache, "archives", "partial"), debs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	list := filepath.Join(cache, "sources.list")
	line := fmt.Sprintf("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", mirror, postgres17Suite)
	if err := os.WriteFile(list, []byte(line), 0o644); err != nil {
		return "", err
	}
	// A private apt state: the system's sources and lists are not touched.
	apt := []string{"-o", "Dir::Etc::SourceList=" + list, "-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::State::Lists=" + filepath.Join(cache, "lists"), "-o", "Dir::Cache=" + cache,
		"-o", "APT::Architecture=amd64", "-o", "APT::Sandbox::User=root", "-q"}
	if err := runLogged(ctx, log, "", "apt-get", append(apt, "update")...); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(debs, "*.deb"))
	for _, f := range old {
		_ = os.Remove(f)
	}
	if err := runLogged(ctx, log, debs, "apt-get", append(apt, append([]string{"download"}, postgres17Packages...)...)...); err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(cache, "stage-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	files, _ := filepath.Glob(filepath.Join(debs, "*.deb"))
	for _, f := range files {
		if err := runLogged(ctx, log, "", "dpkg-deb", "-x", f, stage); err != nil {
			return "", err
		}
	}
	share := filepath.Join(postgres17Root, "share", "postgresql", "17")
	rt := filepath.Join(major, "runtime")
	for _, d := range []string{major, share} {
		if err := os.RemoveAll(d); err != nil {
			return "", err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	// Debian's programs find share/ relative to bin/ (lib/postgresql/17/bin
	// → share/postgresql/17), so the layout under the root is kept.
	copies := [][2]string{
		{filepath.Join(stage, "usr", "lib", "postgresql", "17"), major},
		{filepath.Join(stage, "usr", "share", "postgresql", "17"), share},
		{filepath.Join(stage, "usr", "lib", "x86_64-linux-gnu"), rt},
	}
	for _, c := range copies {
		if err := os.MkdirAll(c[1], 0o755); err != nil {
			return "", err
		}
		if err := runLogged(ctx, log, "", "cp", "-a", c[0]+"/.", c[1]); err != nil {
			return "", err
		}
	}
	// Every directory up to the root must be open to the postgres user.
	for d := major; d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			return "", err
		}
	}
	interp := filepath.Join(rt, "ld-linux-x86-64.so.2")
	entries, err := os.ReadDir(bin)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		p := filepath.Join(bin, e.Name())
		if !isELF(p) {
			continue
		}
		// DT_RPATH (not RUNPATH) also serves the libraries' own
		// dependencies (libicu's libstdc++) and the extensions postgres
		// loads.
		if err := runLogged(ctx, log, "", "patchelf", "--set-interpreter", interp, "--force-rpath", "--set-rpath", rt, p); err != nil {
			return "", err
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "pg_upgrade"), "-V").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("postgres17: the installed pg_upgrade does not run: %v: %s", err, out)
	}
	fmt.Fprintf(log, "postgres17: %s installed in %s\n", strings.TrimSpace(string(out)), time.Since(start).Round(time.Second))
	return bin, nil
}

func isELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// debianMirror is the URI of the system's Debian archive (not its security
// archive), from its apt sources: deb822 .sources files or sources.list.
func debianMirror() (string, error) {
	var uris []string
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		uris = append(uris, deb822URIs(f)...)
	}
	if f, err := os.Open("/etc/apt/sources.list"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) >= 3 && fields[0] == "deb" {
				i := 1
				if strings.HasPrefix(fields[1], "[") {
					for i < len(fields) && !strings.HasSuffix(fields[i], "]") {
						i++
					}
					i++
				}
				if i < len(fields) {
					uris = append(uris, fields[i])
				}
			}
		}
		f.Close()
	}
	for _, u := range uris {
		if strings.Contains(u, "/debian") && !strings.Contains(u, "security") && !strings.Contains(u, "ports") {
			return strings.TrimSuffix(u, "/"), nil
		}
	}
	return "", errors.New("postgres17: no Debian archive in the system's apt sources")
}

// deb822URIs are the URIs of a .sources file's deb stanzas.
func deb822URIs(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, stanza := range strings.Split(string(data), "\n\n") {
		var types, uris string
		for _, l := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
				switch strings.TrimSpace(k) {
				case "Types":
					types = v
				case "URIs":
					uris = v
				}
			}
		}
		if strings.Contains(" "+types+" ", " deb ") {
			out = append(out, strings.Fields(uris)...)
		}
	}
	return out
}

// runLogged runs a program in dir (the current one when empty), its output
// to log.
func runLogged(ctx context.Context, log io.Writer, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("postgres17: %s %s: %v: %s", name, strings.Join(args, " "), err, lastLine(string(out)))
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
