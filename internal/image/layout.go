package image

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteLayoutTar writes idx as an OCI image layout tarball whose index.json names it ref
// (e.g. "ghcr.io/lookout-operator/lookout:v0.1.0"), both as the OCI ref.name and the
// name containerd's importer uses. Every entry gets mtime.
func WriteLayoutTar(w io.Writer, idx v1.ImageIndex, ref string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "lookout-oci-layout-")
	if err != nil {
		return fmt.Errorf("create OCI layout directory for %s: %w", ref, err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return fmt.Errorf("write OCI layout for %s: %w", ref, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		RefName:        ref,
		ContainerdName: ref,
	})); err != nil {
		return fmt.Errorf("write image index %s into the OCI layout: %w", ref, err)
	}
	if err := tarDir(w, dir, mtime); err != nil {
		return fmt.Errorf("tar OCI layout for %s: %w", ref, err)
	}
	return nil
}

// OpenLayoutTar unpacks an OCI layout tarball written by WriteLayoutTar into dir and
// returns its image index and the name it carries; blobs are read from dir on demand.
func OpenLayoutTar(r io.Reader, dir string) (v1.ImageIndex, string, error) {
	files, err := untar(r)
	if err != nil {
		return nil, "", fmt.Errorf("read OCI layout tarball: %w", err)
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, "", err
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("open OCI layout in %s: %w", dir, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(im.Manifests) != 1 {
		return nil, "", fmt.Errorf("OCI layout holds %d entries, want one image index", len(im.Manifests))
	}
	d := im.Manifests[0]
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		return nil, "", fmt.Errorf("open image index %s: %w", d.Digest, err)
	}
	return idx, d.Annotations[RefName], nil
}
