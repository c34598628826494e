package node

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/lookout-operator/lookout/internal/image"
)

// Images are the OCI layout tarballs of a node test and the references they carry.
type Images struct {
	Pause, Reloader, Prometheus string // references
	Files                       []string
}

// TestRepository prefixes the images built for a node test: names no registry serves, so
// a pod that asked for one the node does not have fails to pull instead of fetching
// something else.
const TestRepository = "lookout.test"

// BuildImages builds, for this machine's architecture, the pause image, the
// lookout-reloader image (the same builder as `make images`) and a Prometheus image from
// the prometheus binary at promBin, into dir.
func BuildImages(ctx context.Context, root, dir, promBin, promVersion string) (Images, error) {
	p := image.Platform{OS: "linux", Arch: runtime.GOARCH}
	created := time.Unix(0, 0).UTC()
	var imgs Images
	write := func(name, ref string, idx v1.ImageIndex) error {
		path := filepath.Join(dir, name+".oci.tar")
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := image.WriteLayoutTar(f, idx, ref, created); err != nil {
			return err
		}
		imgs.Files = append(imgs.Files, path)
		return f.Close()
	}

	pause, err := image.GoBuild{Dir: root, Package: "./internal/node/pause"}.Build(ctx, p)
	if err != nil {
		return imgs, err
	}
	idx, err := image.Build(image.Spec{Name: "pause", Binaries: map[image.Platform][]byte{p: pause}, Created: created})
	if err != nil {
		return imgs, err
	}
	imgs.Pause = TestRepository + "/pause:1"
	if err := write("pause", imgs.Pause, idx); err != nil {
		return imgs, err
	}

	r := image.Release{Dir: root, Repository: TestRepository, Version: "node-test", Commit: "node-test",
		Created: created, Platforms: []image.Platform{p}}
	if idx, err = r.Image(ctx, "lookout-reloader", "./cmd/lookout-reloader"); err != nil {
		return imgs, err
	}
	imgs.Reloader = r.Ref("lookout-reloader")
	if err := write("lookout-reloader", imgs.Reloader, idx); err != nil {
		return imgs, err
	}

	prom, err := os.ReadFile(promBin)
	if err != nil {
		return imgs, err
	}
	libs, err := sharedLibraries(promBin)
	if err != nil {
		return imgs, err
	}
	if idx, err = image.Build(image.Spec{Name: "prometheus", Binaries: map[image.Platform][]byte{p: prom}, Files: libs, Created: created}); err != nil {
		return imgs, err
	}
	imgs.Prometheus = TestRepository + "/prometheus:" + promVersion
	if err := write("prometheus", imgs.Prometheus, idx); err != nil {
		return imgs, err
	}
	return imgs, nil
}

// sharedLibraries returns the dynamic loader and the libraries a binary links (the
// cached Prometheus is built with cgo, so it needs libc), read from this machine, by
// their path in the image.
func sharedLibraries(bin string) (map[string][]byte, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", bin, err)
	}
	defer f.Close()
	out := map[string][]byte{}
	add := func(path string) error {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(path, "/")] = b
		return nil
	}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return nil, err
		}
		if err := add(strings.TrimRight(string(b), "\x00")); err != nil {
			return nil, fmt.Errorf("dynamic loader of %s: %w", bin, err)
		}
	}
	if len(out) == 0 {
		return out, nil // static
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, err
	}
	for _, lib := range libs {
		found := false
		for _, d := range []string{"/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/lib", "/usr/lib"} {
			if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
				if err := add(filepath.Join(d, lib)); err != nil {
					return nil, err
				}
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%s links %s, which is not on this machine", bin, lib)
		}
	}
	return out, nil
}
