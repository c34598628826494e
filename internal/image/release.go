package image

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Release builds Lookout's images of one commit.
type Release struct {
	// Dir is the repository root.
	Dir string
	// Repository prefixes the image names, e.g. "ghcr.io/lookout-operator".
	Repository string
	// Version tags the images and is stamped into the binaries; Commit too.
	Version, Commit string
	// Created is the commit time: the images' creation time.
	Created time.Time
	// Source is the repository's URL, for the org.opencontainers.image.source label.
	Source    string
	Platforms []Platform
}

// Ref is the reference an image of this release is tagged with.
func (r Release) Ref(name string) string {
	return r.Repository + "/" + name + ":" + r.Version
}

// Image builds the binary of the main package pkg for every platform and the image named
// after it, with its SBOM and the OCI labels.
func (r Release) Image(ctx context.Context, name, pkg string) (v1.ImageIndex, error) {
	spec := Spec{
		Name:     name,
		Binaries: map[Platform][]byte{},
		SBOMs:    map[Platform][]byte{},
		Created:  r.Created,
		Labels:   r.labels(name),
	}
	for _, p := range r.Platforms {
		bin, sbom, err := r.Binary(ctx, name, pkg, p)
		if err != nil {
			return nil, err
		}
		spec.Binaries[p], spec.SBOMs[p] = bin, sbom
	}
	return Build(spec)
}

// ImageOf is the image named name of bin, a binary Binary built for p (one platform),
// with its SBOM and the OCI labels: the image of a binary another image carries too.
func (r Release) ImageOf(name string, p Platform, bin []byte) (v1.ImageIndex, error) {
	sbom, err := SBOM(name, bin, r.Created)
	if err != nil {
		return nil, fmt.Errorf("SBOM of %s for %s: %w", name, p, err)
	}
	return Build(Spec{
		Name:     name,
		Binaries: map[Platform][]byte{p: bin},
		SBOMs:    map[Platform][]byte{p: sbom},
		Created:  r.Created,
		Labels:   r.labels(name),
	})
}

// Binary builds the main package pkg for p, stamped with the release's version and
// commit, and its SBOM.
func (r Release) Binary(ctx context.Context, name, pkg string, p Platform) (bin, sbom []byte, err error) {
	const v = "github.com/lookout-operator/lookout/internal/version"
	b := GoBuild{Dir: r.Dir, Package: pkg, LDFlags: "-X " + v + ".Version=" + r.Version + " -X " + v + ".Commit=" + r.Commit}
	if bin, err = b.Build(ctx, p); err != nil {
		return nil, nil, err
	}
	if sbom, err = SBOM(name, bin, r.Created); err != nil {
		return nil, nil, fmt.Errorf("SBOM of %s for %s: %w", name, p, err)
	}
	return bin, sbom, nil
}

// labels are the OCI labels of the release's image title.
func (r Release) labels(title string) map[string]string {
	return map[string]string{
		LabelTitle:    title,
		LabelSource:   r.Source,
		LabelVersion:  r.Version,
		LabelRevision: r.Commit,
		LabelCreated:  r.Created.UTC().Format(time.RFC3339),
	}
}
