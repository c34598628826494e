package node

import (
	"context"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/lookout-operator/lookout/internal/image"
)

// Images are the OCI layout tarballs of a node test and the references they carry.
type Images struct {
	Pause, Lookout, Reloader, Prometheus string // references
	Files                                []string
}

// TestVersion tags the lookout and lookout-reloader images built for a node test.
const TestVersion = "node-test"

// TestRepository prefixes the images built for a node test: names no registry serves, so
// a pod that asked for one the node does not have fails to pull instead of fetching
// something else.
const TestRepository = "lookout.test"

// BuildImages builds, for this machine's architecture, the pause image, the lookout and
// lookout-reloader images (the same builder as `make images`) and a Prometheus image from
// the prometheus binary at promBin, into dir.
func BuildImages(ctx context.Context, root, dir, promBin, promVersion string) (imgs Images, err error) {
	p := image.HostPlatform()
	w := newLayouts(dir)
	defer func() { imgs.Files = w.files }()
	if imgs.Pause, err = w.pause(ctx, root); err != nil {
		return imgs, err
	}
	r := image.Release{Dir: root, Repository: TestRepository, Version: TestVersion, Commit: TestVersion,
		Created: w.created, Platforms: []image.Platform{p}}
	for name, ref := range map[string]*string{"lookout": &imgs.Lookout, "lookout-reloader": &imgs.Reloader} {
		idx, err := r.Image(ctx, name, "./cmd/"+name)
		if err != nil {
			return imgs, err
		}
		*ref = r.Ref(name)
		if err := w.write(name, *ref, idx); err != nil {
			return imgs, err
		}
	}

	prom, err := os.ReadFile(promBin)
	if err != nil {
		return imgs, err
	}
	// The cached Prometheus is built with cgo: it needs libc and the loader.
	libs := image.NewHostFiles()
	if err := libs.AddLibraries(ctx, promBin); err != nil {
		return imgs, err
	}
	idx, err := image.Build(image.Spec{Name: "prometheus", Binaries: map[image.Platform][]byte{p: prom},
		Files: libs.Files(), FilesFrom: "this machine's libraries of prometheus", Created: w.created})
	if err != nil {
		return imgs, err
	}
	imgs.Prometheus = TestRepository + "/prometheus:" + promVersion
	if err := w.write("prometheus", imgs.Prometheus, idx); err != nil {
		return imgs, err
	}
	return imgs, nil
}

// layouts writes the OCI layout tarballs of a node's images into dir.
type layouts struct {
	dir     string
	created time.Time
	files   []string
}

// newLayouts dates every image at the Unix epoch: the same inputs, the same digests.
func newLayouts(dir string) *layouts {
	return &layouts{dir: dir, created: time.Unix(0, 0).UTC()}
}

func (w *layouts) write(name, ref string, idx v1.ImageIndex) error {
	path := filepath.Join(w.dir, name+".oci.tar")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := image.WriteLayoutTar(f, idx, ref, w.created); err != nil {
		return err
	}
	w.files = append(w.files, path)
	return f.Close()
}

// pause builds and writes the sandbox image and returns its reference.
func (w *layouts) pause(ctx context.Context, root string) (string, error) {
	p := image.HostPlatform()
	pause, err := image.GoBuild{Dir: root, Package: "./internal/node/pause"}.Build(ctx, p)
	if err != nil {
		return "", err
	}
	idx, err := image.Build(image.Spec{Name: "pause", Binaries: map[image.Platform][]byte{p: pause}, Created: w.created})
	if err != nil {
		return "", err
	}
	ref := TestRepository + "/pause:1"
	return ref, w.write("pause", ref, idx)
}
