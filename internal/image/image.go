// Package image builds Lookout's container images without a container engine: static Go
// binaries on a distroless-style base (no shell, no package manager; a passwd and group
// file with the non-root user 65532, /tmp and the user's home), one image per platform
// under one OCI image index, written as an OCI layout tarball that containerd imports
// (`ctr images import`) and registries accept (`crane push`, `oras`). Everything is
// derived from the inputs and the commit time, so two builds of one commit are the same
// bytes.
package image

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the images run as: distroless's "nonroot", which the
// Pod Security "restricted" profile accepts (runAsNonRoot) without a runAsUser.
const NonRoot = 65532

// Account is the user (and the group of the same name and id) an image runs as: its
// line in /etc/passwd and /etc/group, and its home directory.
type Account struct {
	Name string
	ID   int
}

// nonRoot is the account of every image that names no other.
var nonRoot = Account{Name: "nonroot", ID: NonRoot}

func (a Account) home() string { return "home/" + a.Name }

// File is one more entry of an image's layer: a regular file, or a symbolic link
// when Link is set.
type File struct {
	Data []byte
	// Mode holds the permission bits (0 is 0o644).
	Mode int64
	Link string
}

// OCI annotation and label keys (image-spec annotations.md).
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	// RefName names an image in an OCI layout's index.json; containerd's importer
	// reads ContainerdName first.
	RefName        = "org.opencontainers.image.ref.name"
	ContainerdName = "io.containerd.image.name"
)

// Platform is one os/architecture an image is built for.
type Platform struct {
	OS, Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "linux/amd64".
func ParsePlatform(s string) (Platform, error) {
	goos, arch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q is not OS/ARCH (e.g. linux/amd64)", s)
	}
	return Platform{OS: goos, Arch: arch}, nil
}

// Spec describes one image: a single binary as its entrypoint.
type Spec struct {
	// Name is the binary's name; it is installed as /bin/<Name> and is the entrypoint.
	Name string
	// Binaries holds the built binary for each platform.
	Binaries map[Platform][]byte
	// SBOMs optionally holds an SPDX document per platform, installed as
	// /usr/share/doc/<Name>/sbom.spdx.json.
	SBOMs map[Platform][]byte
	// Files are more files, in a layer of their own below the binary's (they change
	// less often), by path without the leading slash: e.g. the shared libraries of a
	// binary that is not static. FilesFrom says where they come from, in the
	// image's history.
	Files     map[string]File
	FilesFrom string
	// Account is the user the image runs as (default nonroot, 65532).
	Account Account
	// Args are the default arguments (the image's Cmd).
	Args []string
	// Env is added to PATH=/bin and HOME.
	Env []string
	// Labels go into the image config and, as annotations, onto each manifest.
	Labels map[string]string
	// Created is the time written into the config, the history and every tar entry:
	// the commit time, so that a build is reproducible.
	Created time.Time
}

// Build returns the multi-platform image index for the spec, platforms in sorted order.
func Build(spec Spec) (v1.ImageIndex, error) {
	if spec.Name == "" || strings.ContainsAny(spec.Name, "/ ") {
		return nil, fmt.Errorf("image name %q is not a plain binary name", spec.Name)
	}
	if len(spec.Binaries) == 0 {
		return nil, fmt.Errorf("image %s: no binaries", spec.Name)
	}
	platforms := make([]Platform, 0, len(spec.Binaries))
	for p := range spec.Binaries {
		platforms = append(platforms, p)
	}
	sort.Slice(platforms, func(i, j int) bool { return platforms[i].String() < platforms[j].String() })

	if spec.Account == (Account{}) {
		spec.Account = nonRoot
	}
	baseEntries := baseFiles(spec.Created, spec.Account)
	base, err := layer(baseEntries)
	if err != nil {
		return nil, fmt.Errorf("image %s: base layer: %w", spec.Name, err)
	}
	var extra v1.Layer
	if len(spec.Files) > 0 {
		if extra, err = filesLayer(spec, baseEntries); err != nil {
			return nil, fmt.Errorf("image %s: %w", spec.Name, err)
		}
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := buildImage(spec, p, base, extra)
		if err != nil {
			return nil, fmt.Errorf("image %s for %s: %w", spec.Name, p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return idx, nil
}

func buildImage(spec Spec, p Platform, base, extra v1.Layer) (v1.Image, error) {
	files := []file{
		{name: "bin/" + spec.Name, mode: 0o755, data: spec.Binaries[p]},
	}
	if sbom := spec.SBOMs[p]; sbom != nil {
		files = append(files,
			file{name: "usr/share/doc/" + spec.Name + "/", mode: 0o755, dir: true},
			file{name: "usr/share/doc/" + spec.Name + "/sbom.spdx.json", mode: 0o644, data: sbom})
	}
	for i := range files {
		files[i].mtime = spec.Created
	}
	app, err := layer(files)
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}
	created := v1.Time{Time: spec.Created}
	adds := []mutate.Addendum{{Layer: base, History: v1.History{Created: created,
		CreatedBy: fmt.Sprintf("lookout images: base (passwd, group, /tmp, /%s)", spec.Account.home())}}}
	if extra != nil {
		adds = append(adds, mutate.Addendum{Layer: extra, History: v1.History{Created: created, CreatedBy: "lookout images: " + spec.FilesFrom}})
	}
	adds = append(adds, mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "lookout images: /bin/" + spec.Name}})
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: []string{"/bin/" + spec.Name},
		Cmd:        append([]string(nil), spec.Args...),
		Env:        append([]string{"PATH=/bin", "HOME=/" + spec.Account.home()}, spec.Env...),
		User:       fmt.Sprintf("%d:%d", spec.Account.ID, spec.Account.ID),
		WorkingDir: "/" + spec.Account.home(),
		Labels:     copyMap(spec.Labels),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	annotated, ok := mutate.Annotations(img, copyMap(spec.Labels)).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("annotating the manifest did not return an image")
	}
	return annotated, nil
}

// baseFiles is the distroless-style root: enough for a static Go binary to run as a
// named non-root user. No CA bundle: neither binary dials anything but the
// apiserver (whose CA comes with the service-account token) and the server it reloads.
func baseFiles(mtime time.Time, a Account) []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/%s:/sbin/nologin\n", a.Name, a.ID, a.ID, a.Name, a.home())
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", a.Name, a.ID)
	files := []file{
		{name: "bin/", mode: 0o755, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: a.home() + "/", mode: 0o700, dir: true, uid: a.ID},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/share/", mode: 0o755, dir: true},
		{name: "usr/share/doc/", mode: 0o755, dir: true},
	}
	for i := range files {
		files[i].mtime = mtime
	}
	return files
}

// filesLayer is the layer of spec.Files, each with its parent directories (root's,
// 0755) before it. A file may not replace an entry of the base layer: a link named
// bin would hide the binary.
func filesLayer(spec Spec, base []file) (v1.Layer, error) {
	taken := map[string]bool{}
	for _, f := range base {
		taken[strings.TrimSuffix(f.name, "/")] = true
	}
	names := make([]string, 0, len(spec.Files))
	for name := range spec.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	var files []file
	dirs := map[string]bool{}
	for _, name := range names {
		if taken[name] || strings.HasPrefix(name, "/") || name == "bin/"+spec.Name {
			return nil, fmt.Errorf("file %q replaces an entry of the image's base or binary layer", name)
		}
		for i := 0; i < len(name); i++ {
			if name[i] == '/' && !dirs[name[:i+1]] {
				dirs[name[:i+1]] = true
				files = append(files, file{name: name[:i+1], mode: 0o755, dir: true})
			}
		}
		f := spec.Files[name]
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		files = append(files, file{name: name, mode: mode, data: f.Data, link: f.Link})
	}
	for i := range files {
		files[i].mtime = spec.Created
	}
	l, err := layer(files)
	if err != nil {
		return nil, fmt.Errorf("files layer: %w", err)
	}
	return l, nil
}

func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, files); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
