package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// GoBuild is one static build of a main package.
type GoBuild struct {
	// Dir is the module directory the package is built in.
	Dir string
	// Package is the main package, e.g. "./cmd/lookout".
	Package string
	// LDFlags are added to "-s -w" (no symbol table or DWARF: the image is for running;
	// the module list `go version -m` reads stays).
	LDFlags string
}

// Build compiles the package for p with cgo off (a static binary for an image with no
// libc), -trimpath (no build paths inside) and returns it.
func (b GoBuild) Build(ctx context.Context, p Platform) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "lookout-image-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w "+b.LDFlags, "-o", out, b.Package)
	cmd.Dir = b.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w\n%s", b.Package, p, err, log.String())
	}
	return os.ReadFile(out)
}
