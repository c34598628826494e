package image

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var (
	amd64 = Platform{OS: "linux", Arch: "amd64"}
	arm64 = Platform{OS: "linux", Arch: "arm64"}
)

// TestReleaseImage builds the lookout-reloader image the way `make images` does (real
// static builds for both platforms, SBOMs, labels, the OCI layout tarball), reads the
// tarball back and runs the amd64 binary taken out of its layers. The lookout image is
// the same code path with a larger binary.
func TestReleaseImage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	created := time.Date(2026, 11, 24, 12, 30, 0, 0, time.UTC)
	r := Release{
		Dir: root, Repository: "example.test/lookout", Version: "v9.8.7-test", Commit: "0123456789abcdef",
		Created: created, Source: "https://github.com/lookout-operator/lookout",
		Platforms: []Platform{amd64, arm64},
	}
	const name = "lookout-reloader"
	idx, err := r.Image(ctx, name, "./cmd/"+name)
	if err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	if err := WriteLayoutTar(&tarball, idx, r.Ref(name), created); err != nil {
		t.Fatal(err)
	}

	read, ref, err := OpenLayoutTar(bytes.NewReader(tarball.Bytes()), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := "example.test/lookout/lookout-reloader:v9.8.7-test"; ref != want {
		t.Errorf("the layout names the image %q, want %q", ref, want)
	}
	im, err := read.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	if got := strings.Join(platforms, ","); got != "linux/amd64,linux/arm64" {
		t.Fatalf("platforms %s, want linux/amd64,linux/arm64", got)
	}

	wantLabels := map[string]string{
		LabelSource:   "https://github.com/lookout-operator/lookout",
		LabelVersion:  "v9.8.7-test",
		LabelRevision: "0123456789abcdef",
		LabelCreated:  "2026-11-24T12:30:00Z",
		LabelTitle:    name,
	}
	var amd64Binary []byte
	for _, d := range im.Manifests {
		p := Platform{OS: d.Platform.OS, Arch: d.Platform.Architecture}
		img, err := read.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != p.OS || cf.Architecture != p.Arch {
			t.Errorf("%s: config says %s/%s", p, cf.OS, cf.Architecture)
		}
		if got := strings.Join(cf.Config.Entrypoint, " "); got != "/bin/lookout-reloader" {
			t.Errorf("%s: entrypoint %q, want /bin/lookout-reloader (the command the generated pods run)", p, got)
		}
		if cf.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", p, cf.Config.User)
		}
		if !cf.Created.Time.Equal(created) {
			t.Errorf("%s: created %s, want the commit time %s", p, cf.Created.Time, created)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range wantLabels {
			if cf.Config.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", p, k, cf.Config.Labels[k], v)
			}
			if m.Annotations[k] != v {
				t.Errorf("%s: manifest annotation %s = %q, want %q", p, k, m.Annotations[k], v)
			}
		}

		fs := flatten(t, img)
		if _, ok := fs["bin/sh"]; ok {
			t.Errorf("%s: the image has a shell", p)
		}
		if !strings.Contains(string(fs["etc/passwd"]), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot user 65532:\n%s", p, fs["etc/passwd"])
		}
		bin := fs["bin/lookout-reloader"]
		checkStaticELF(t, p, bin)
		checkSBOM(t, p, fs["usr/share/doc/lookout-reloader/sbom.spdx.json"])
		if p == amd64 {
			amd64Binary = bin
		}
	}

	// The binary out of the layer runs and carries the stamped version.
	exe := filepath.Join(t.TempDir(), "lookout-reloader")
	if err := os.WriteFile(exe, amd64Binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, exe, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("lookout-reloader --version from the image: %v\n%s", err, out)
	}
	if want := "lookout-reloader v9.8.7-test (commit 0123456789abcdef)"; strings.TrimSpace(string(out)) != want {
		t.Errorf("lookout-reloader --version printed %q, want %q", out, want)
	}

	// The same commit builds the same bytes.
	again, err := r.Image(ctx, name, "./cmd/"+name)
	if err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := WriteLayoutTar(&second, again, r.Ref(name), created); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tarball.Bytes(), second.Bytes()) {
		d1, _ := idx.Digest()
		d2, _ := again.Digest()
		t.Errorf("two builds of one commit differ: index %s then %s", d1, d2)
	}
}

func TestParsePlatform(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Platform
		wantErr  bool
	}{
		{name: "reads os and architecture", in: "linux/arm64", want: arm64},
		{name: "refuses a bare architecture", in: "amd64", wantErr: true},
		{name: "refuses a variant it would drop", in: "linux/arm/v7", wantErr: true},
		{name: "refuses an empty os", in: "/amd64", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePlatform(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePlatform(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ParsePlatform(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestBuildRefusesAnImageWithoutBinaries(t *testing.T) {
	if _, err := Build(Spec{Name: "lookout"}); err == nil {
		t.Fatal("Build accepted an image with no binary")
	}
	if _, err := Build(Spec{Name: "bin/lookout", Binaries: map[Platform][]byte{amd64: {1}}}); err == nil {
		t.Fatal("Build accepted a name with a slash")
	}
}

// flatten returns the image's filesystem as the runtime sees it (layers applied in order).
func flatten(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	fs, err := untar(rc)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func checkStaticELF(t *testing.T, p Platform, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s: /bin/lookout-reloader is not an ELF binary: %v", p, err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Arch]
	if f.Machine != want {
		t.Errorf("%s: binary for %s, want %s", p, f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: binary is dynamically linked (has an interpreter); the image has no libc", p)
		}
	}
}

func checkSBOM(t *testing.T, p Platform, doc []byte) {
	t.Helper()
	var sbom struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name    string `json:"name"`
			Version string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(doc, &sbom); err != nil {
		t.Fatalf("%s: SBOM is not JSON: %v\n%s", p, err, doc)
	}
	if sbom.SPDXVersion != "SPDX-2.3" {
		t.Errorf("%s: SBOM version %q", p, sbom.SPDXVersion)
	}
	names := map[string]bool{}
	for _, pkg := range sbom.Packages {
		names[pkg.Name] = true
	}
	// The reloader links pflag and Prometheus's client library: both must be listed.
	for _, want := range []string{"lookout-reloader", "stdlib", "github.com/spf13/pflag", "github.com/prometheus/client_golang"} {
		if !names[want] {
			t.Errorf("%s: SBOM lists no %s (%d packages)", p, want, len(sbom.Packages))
		}
	}
}
