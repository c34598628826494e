// Command images builds Lookout's container images (lookout and lookout-reloader) for
// linux/amd64 and linux/arm64 without a container engine and writes each as an OCI
// layout tarball, _output/images/<name>.oci.tar, tagged <repository>/<name>:<version>.
// lookout-postgres, the PostgreSQL instances' image, is made of this machine's
// PostgreSQL files (Debian's packages), so it is built for this machine's platform only.
// `make images` runs it. Import one into containerd with
// `ctr -n k8s.io images import --all-platforms _output/images/lookout.oci.tar`, or push
// it with any OCI registry client.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/lookout-operator/lookout/internal/image"
	"github.com/lookout-operator/lookout/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "_output/images", "Directory for the OCI layout tarballs")
	ver := flag.String("version", "", "Version to tag and stamp (default: git describe --tags --always --dirty)")
	commit := flag.String("commit", "", "Commit to stamp (default: git rev-parse HEAD)")
	repo := flag.String("repository", version.ImageRepository, "Repository the image names start with")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "Comma-separated OS/ARCH list")
	only := flag.String("images", "lookout,lookout-reloader,"+image.PostgresName, "Comma-separated images to build")
	major := flag.Int("postgres-major", 15, "PostgreSQL major of "+image.PostgresName+" (its Debian packages must be installed)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root, err := git(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	if *ver == "" {
		if *ver, err = git(ctx, "describe", "--tags", "--always", "--dirty"); err != nil {
			return err
		}
	}
	if *commit == "" {
		if *commit, err = git(ctx, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	// The commit time, not the clock: the same commit gives the same image digests.
	ct, err := git(ctx, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return err
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return fmt.Errorf("commit time %q: %w", ct, err)
	}
	r := image.Release{
		Dir: root, Repository: *repo, Version: *ver, Commit: *commit,
		Created: time.Unix(secs, 0).UTC(),
		Source:  "https://github.com/lookout-operator/lookout",
	}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := image.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		r.Platforms = append(r.Platforms, p)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, name := range strings.Split(*only, ",") {
		name = strings.TrimSpace(name)
		start := time.Now()
		idx, built, err := buildImage(ctx, r, name, *major)
		if err != nil {
			return err
		}
		path := filepath.Join(*out, name+".oci.tar")
		if err := writeFile(path, func(f *os.File) error {
			return image.WriteLayoutTar(f, idx, r.Ref(name), r.Created)
		}); err != nil {
			return err
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s@%s  %s  (%s, %.1fs)\n", r.Ref(name), d, path, built, time.Since(start).Seconds())
	}
	return nil
}

// buildImage builds one image and says for which platforms.
func buildImage(ctx context.Context, r image.Release, name string, major int) (v1.ImageIndex, string, error) {
	if name == image.PostgresName {
		idx, err := r.PostgresImage(ctx, major, nil)
		return idx, image.HostPlatform().String() + " only: this machine's PostgreSQL files", err
	}
	idx, err := r.Image(ctx, name, "./cmd/"+name)
	var ps []string
	for _, p := range r.Platforms {
		ps = append(ps, p.String())
	}
	return idx, strings.Join(ps, ","), err
}

// writeFile writes through a temporary file so an interrupted build leaves no truncated
// tarball behind.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func git(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(out.String()), nil
}
