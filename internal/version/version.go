// Package version holds the build's version and commit, stamped by the
// Makefile with -ldflags -X.
package version

import "runtime/debug"

var (
	// Version is the release version, e.g. v0.1.0; "dev" for local builds.
	Version = "dev"
	// Commit is the git commit the binary was built from.
	Commit = ""
)

// CommitOrUnknown returns Commit, falling back to the VCS stamp of the Go
// toolchain, then to "unknown".
func CommitOrUnknown() string {
	if Commit != "" {
		return Commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// ImageRepository is where Lookout's release images are published; the images are
// ImageRepository/lookout and ImageRepository/lookout-reloader, tagged with Version
// (hack/images builds them).
const ImageRepository = "ghcr.io/lookout-operator"

// Image is the reference of one of Lookout's images at this build's version, e.g.
// Image("lookout-reloader") = "ghcr.io/lookout-operator/lookout-reloader:v0.1.0".
func Image(name string) string {
	return ImageRepository + "/" + name + ":" + Version
}

// ReloaderImage is the config-reloader image that matches this operator: the default of
// --reloader-image, so an operator never runs a sidecar of another version by accident.
func ReloaderImage() string {
	return Image("lookout-reloader")
}
