package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// PostgresName is the image of the PostgreSQL instances: the lookout binary, whose
// `lookout instance` is the entrypoint of every PostgreSQL container, on this machine's
// PostgreSQL.
const PostgresName = "lookout-postgres"

// PostgresAccount is the user PostgreSQL runs as in lookout-postgres: PGO's postgres,
// uid and gid 26, which the instance pods' securityContext asks for. initdb and
// `postgres --single` look the user up, so it must be in /etc/passwd.
var PostgresAccount = Account{Name: "postgres", ID: 26}

// HostPlatform is this machine's platform: the only one an image of its files is for.
func HostPlatform() Platform { return Platform{OS: "linux", Arch: runtime.GOARCH} }

// PostgresPackages are the Debian packages whose files lookout-postgres takes for
// PostgreSQL major: the server, the client programs the instance manager runs
// (pg_basebackup), libpq, and the time zone data the server reads (Debian builds
// it with the system's tzdata).
func PostgresPackages(major int) []string {
	m := strconv.Itoa(major)
	return []string{"postgresql-" + m, "postgresql-client-" + m, "libpq5", "tzdata"}
}

// PostgresFiles collects from this machine what the instances run: the files of
// PostgresPackages but documentation, translations, the JIT (llvmjit and its bitcode,
// which would bring LLVM's 100 MB) and the extension build kit (pgxs); pgbackrest;
// pgbouncer (the pooler's pods, `lookout pgbouncer`, run this image too); /bin/sh (initdb and pg_rewind start postgres through popen and system); the CA
// bundle OpenSSL reads by default (pgbackrest's S3 repositories verify TLS with it);
// and every shared library those programs and libraries link, with the loader.
func PostgresFiles(ctx context.Context, major int) (*HostFiles, error) {
	m := strconv.Itoa(major)
	skip := []string{
		"/usr/share/doc/", "/usr/share/man/", "/usr/share/locale/", "/usr/share/lintian/",
		"/usr/share/postgresql/" + m + "/man/",
		"/usr/lib/postgresql/" + m + "/lib/bitcode/", "/usr/lib/postgresql/" + m + "/lib/pgxs/",
		"/usr/lib/postgresql/" + m + "/lib/llvmjit",
	}
	h := NewHostFiles()
	for _, pkg := range PostgresPackages(major) {
		paths, err := dpkgFiles(ctx, pkg)
		if err != nil {
			return nil, err
		}
	files:
		for _, p := range paths {
			for _, s := range skip {
				if strings.HasPrefix(p, s) {
					continue files
				}
			}
			st, err := os.Lstat(p)
			if err != nil {
				return nil, fmt.Errorf("%s lists %s: %w", pkg, p, err)
			}
			if st.IsDir() {
				continue // its files are listed one by one
			}
			if err := h.Add(p); err != nil {
				return nil, err
			}
		}
	}
	for name, src := range postgresPrograms {
		if err := h.AddAs(name, src); err != nil {
			return nil, err
		}
	}
	if err := h.Add("/usr/lib/ssl/cert.pem"); err != nil {
		return nil, err
	}
	if err := h.AddLibraries(ctx); err != nil {
		return nil, err
	}
	versions, err := packageVersions(ctx, append(PostgresPackages(major), "pgbackrest", "pgbouncer", "dash"))
	if err != nil {
		return nil, err
	}
	h.Put("usr/share/doc/"+PostgresName+"/packages", File{Data: versions})
	return h, nil
}

// postgresPrograms are the programs lookout-postgres carries besides PostgreSQL, on
// its PATH (/bin), with where they come from on this machine (Debian's dash,
// pgbackrest and pgbouncer).
var postgresPrograms = map[string]string{
	"bin/sh":         "/bin/sh",
	"bin/pgbackrest": "/usr/bin/pgbackrest",
	"bin/pgbouncer":  "/usr/sbin/pgbouncer",
}

// dpkgFiles lists the files of an installed Debian package.
func dpkgFiles(ctx context.Context, pkg string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "dpkg", "-L", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg -L %s (is it installed? apt-get install %s): %w", pkg, pkg, err)
	}
	var paths []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if p := strings.TrimSpace(sc.Text()); strings.HasPrefix(p, "/") && p != "/." {
			paths = append(paths, p)
		}
	}
	return paths, sc.Err()
}

// packageVersions is "<package> <version> <architecture>" per line: where the image's
// files come from.
func packageVersions(ctx context.Context, pkgs []string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", append([]string{"-W", "-f", "${Package} ${Version} ${Architecture}\n"}, pkgs...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query %s: %w", strings.Join(pkgs, " "), err)
	}
	return out, nil
}

// PostgresImage builds lookout-postgres for this machine's platform, which must be one
// of the release's: the lookout binary (built here when lookout is nil) as the
// entrypoint, `instance` its default argument, running as PostgresAccount, on
// PostgresFiles(major).
func (r Release) PostgresImage(ctx context.Context, major int, lookout []byte) (v1.ImageIndex, error) {
	p := HostPlatform()
	found := false
	for _, q := range r.Platforms {
		found = found || q == p
	}
	if !found {
		return nil, fmt.Errorf("%s is made of this machine's (%s) PostgreSQL files: it cannot be built for %v", PostgresName, p, r.Platforms)
	}
	var sbom []byte
	var err error
	if lookout == nil {
		if lookout, sbom, err = r.Binary(ctx, "lookout", "./cmd/lookout", p); err != nil {
			return nil, err
		}
	} else if sbom, err = SBOM("lookout", lookout, r.Created); err != nil {
		return nil, err
	}
	files, err := PostgresFiles(ctx, major)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PostgresName, err)
	}
	return Build(Spec{
		Name:      "lookout",
		Binaries:  map[Platform][]byte{p: lookout},
		SBOMs:     map[Platform][]byte{p: sbom},
		Files:     files.Files(),
		FilesFrom: "PostgreSQL " + strconv.Itoa(major) + " from this machine's " + strings.Join(PostgresPackages(major), ", ") + ", pgbackrest, pgbouncer, /bin/sh and their libraries",
		Account:   PostgresAccount,
		Args:      []string{"instance"},
		Labels:    r.labels(PostgresName),
		Created:   r.Created,
	})
}
