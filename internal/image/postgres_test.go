package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"

	"github.com/lookout-operator/lookout/internal/gather"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// TestThePostgresImageRunsPostgresAndInitdbInItsOwnRootFilesystem builds
// lookout-postgres as `make images` does, writes and reads back its layout tarball,
// unpacks the image's filesystem and runs PostgreSQL's programs in it (chroot, as the
// postgres user): nothing of this machine's but the kernel is in reach, so what runs is
// what the image carries.
func TestThePostgresImageRunsPostgresAndInitdbInItsOwnRootFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the test must run as root (chroot, the postgres user's files)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	created := time.Date(2026, 11, 28, 23, 30, 0, 0, time.UTC)
	r := Release{Dir: root, Repository: "example.test/lookout", Version: "v9.8.7-test", Commit: "0123456789abcdef",
		Created: created, Platforms: []Platform{HostPlatform()}}
	began := time.Now()
	idx, err := r.PostgresImage(ctx, 15, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	if err := WriteLayoutTar(&tarball, idx, r.Ref(PostgresName), created); err != nil {
		t.Fatal(err)
	}
	t.Logf("built in %s", time.Since(began).Round(time.Millisecond))
	read, ref, err := OpenLayoutTar(bytes.NewReader(tarball.Bytes()), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := "example.test/lookout/lookout-postgres:v9.8.7-test"; ref != want {
		t.Errorf("the layout names the image %q, want %q", ref, want)
	}
	img := onlyImage(t, read)

	if PostgresAccount.ID != pgrender.DefaultRunAsUser {
		t.Errorf("the image's postgres user is %d, the instance pods run as %d", PostgresAccount.ID, pgrender.DefaultRunAsUser)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(append(cf.Config.Entrypoint, cf.Config.Cmd...), " "); got != strings.Join(pgrender.InstanceCommand, " ") {
		t.Errorf("the image runs %q, want the instance manager %q", got, strings.Join(pgrender.InstanceCommand, " "))
	}
	if want := fmt.Sprintf("%d:%d", PostgresAccount.ID, PostgresAccount.ID); cf.Config.User != want {
		t.Errorf("user %q, want %s", cf.Config.User, want)
	}
	if cf.Config.Labels[LabelTitle] != PostgresName {
		t.Errorf("title %q, want %s", cf.Config.Labels[LabelTitle], PostgresName)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var compressed int64
	var layers []string
	for _, l := range m.Layers {
		compressed += l.Size
		layers = append(layers, fmt.Sprintf("%.1f", float64(l.Size)/(1<<20)))
	}
	// The JIT alone would add LLVM's 100 MB.
	if compressed > 100<<20 {
		t.Errorf("the image's layers are %d MiB compressed, more than 100", compressed>>20)
	}

	rootfs := filepath.Join(t.TempDir(), "rootfs")
	size := unpack(t, img, rootfs)
	t.Logf("%s: %.1f MiB compressed (layers: base, PostgreSQL, lookout: %s MiB; layout tarball %.1f MiB), %.1f MiB unpacked", ref,
		float64(compressed)/(1<<20), strings.Join(layers, " + "), float64(tarball.Len())/(1<<20), float64(size)/(1<<20))
	for _, absent := range []string{"usr/lib/postgresql/15/lib/llvmjit.so", "usr/lib/postgresql/15/lib/bitcode", "usr/share/doc/postgresql-15"} {
		if _, err := os.Lstat(filepath.Join(rootfs, absent)); err == nil {
			t.Errorf("the image has /%s", absent)
		}
	}
	// A container runtime gives /dev; initdb sends its children's output to /dev/null:
	// the host's, bind-mounted (the temporary directory may not allow device files).
	devNull := filepath.Join(rootfs, "dev", "null")
	if err := os.MkdirAll(filepath.Dir(devNull), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(devNull, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("/dev/null", devNull, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Unmount(devNull, 0); err != nil {
			t.Error(err)
		}
	}()

	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = []string{"PATH=/bin", "HOME=/home/postgres", "LC_ALL=C"}
		cmd.Dir = "/"
		cmd.Stdin = strings.NewReader(stdin)
		uid := uint32(PostgresAccount.ID)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: uid, Gid: uid, NoSetGroups: true}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s in the image: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const bin = "/usr/lib/postgresql/15/bin/"
	if out := run("", bin+"postgres", "--version"); !strings.HasPrefix(out, "postgres (PostgreSQL) 15.") {
		t.Errorf("postgres --version printed %q", out)
	}
	// The instance manager's initdb (internal/pginstance).
	run("", bin+"initdb", "-D", "/tmp/pgdata", "-U", "postgres", "--data-checksums", "--encoding=UTF8", "--locale=C",
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-instructions")
	if v, err := os.ReadFile(filepath.Join(rootfs, "tmp", "pgdata", "PG_VERSION")); err != nil || strings.TrimSpace(string(v)) != "15" {
		t.Errorf("initdb left PG_VERSION %q (%v), want 15", v, err)
	}
	if out := run("SELECT current_user, current_setting('TimeZone') AS tz;\n", bin+"postgres", "--single", "-D", "/tmp/pgdata", "postgres"); !strings.Contains(out, `current_user = "postgres"`) {
		t.Errorf("a query in single-user mode printed:\n%s", out)
	}
	if out := run("", bin+"pg_controldata", "/tmp/pgdata"); controlValue(out, "Data page checksum version") != "1" {
		t.Errorf("pg_controldata shows no checksums:\n%s", out)
	}
	if out := run("", "/bin/pgbackrest", "version"); !strings.HasPrefix(out, "pgBackRest ") {
		t.Errorf("pgbackrest version printed %q", out)
	}
	// The operator, whose image has no PostgreSQL, checks clusters against the catalog
	// built into it: it must list exactly what this image's postgres accepts.
	described := map[string]bool{}
	for _, line := range strings.Split(run("", bin+"postgres", "--describe-config"), "\n") {
		if name, _, _ := strings.Cut(line, "\t"); name != "" {
			described[strings.ToLower(name)] = true
		}
	}
	if cat, err := gather.PostgresCatalog(); err != nil {
		t.Error(err)
	} else if string(gather.CatalogFile(15, cat.Parameters[15])) != string(gather.CatalogFile(15, described)) {
		t.Errorf("the operator's built-in catalog of PostgreSQL 15 (%d parameters) is not what the image's postgres --describe-config lists (%d)", len(cat.Parameters[15]), len(described))
	}
	// The pooler's pods run this image: `lookout pgbouncer` starts pgbouncer from PATH.
	if out := run("", "/bin/pgbouncer", "--version"); !strings.HasPrefix(out, "PgBouncer ") {
		t.Errorf("pgbouncer --version printed %q", out)
	}
	if out := run("", "/bin/lookout", "instance", "--help"); !strings.Contains(out, "initdb") {
		t.Errorf("lookout instance --help printed %q", out)
	}
}

// controlValue is the value of one line of pg_controldata's output.
func controlValue(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func onlyImage(t *testing.T, idx v1.ImageIndex) v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.Architecture != HostPlatform().Arch {
		t.Fatalf("the index holds %+v, want one image for %s", im.Manifests, HostPlatform())
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// unpack writes the image's filesystem (its layers applied in order) into dir with the
// modes and owners of the tar entries, as a container runtime does, and returns the
// bytes of its regular files.
func unpack(t *testing.T, img v1.Image, dir string) int64 {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	var size int64
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return size
		}
		if err != nil {
			t.Fatal(err)
		}
		name := path.Clean(h.Name)
		if strings.HasPrefix(name, "../") || path.IsAbs(name) {
			t.Fatalf("tar entry %q leaves the image", h.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				t.Fatal(err)
			}
			continue
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			size += int64(len(data))
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("tar entry %s of type %c", h.Name, h.Typeflag)
		}
		if err := os.Chown(p, h.Uid, h.Gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
}

// modeBits are the sticky, setuid and setgid bits of a tar mode as Go's.
func modeBits(m int64) os.FileMode {
	var out os.FileMode
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	if m&0o2000 != 0 {
		out |= os.ModeSetgid
	}
	if m&0o4000 != 0 {
		out |= os.ModeSetuid
	}
	return out
}
