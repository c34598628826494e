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
