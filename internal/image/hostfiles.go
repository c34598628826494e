package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// HostFiles collects files of this machine for an image's layer (Spec.Files), so that
// programs that are not static Go binaries run in the image as they run here. A path
// is taken as the host resolves it: every symbolic link on the way (a merged /usr's
// /lib -> usr/lib, libpq.so.5 -> libpq.so.5.15) becomes the same link in the image and
// the file it leads to is taken too. The files are this machine's, so an image made of
// them is for this machine's architecture only.
type HostFiles struct {
	files map[string]File // by path in the image, without the leading slash
	elf   []string        // host paths of the programs and libraries whose libraries to add
}

// NewHostFiles returns an empty collection.
func NewHostFiles() *HostFiles {
	return &HostFiles{files: map[string]File{}}
}

// Add takes the files at the absolute host paths; a directory is taken with
// everything below it.
func (h *HostFiles) Add(paths ...string) error {
	for _, p := range paths {
		if err := h.add(p, 0); err != nil {
			return err
		}
	}
	return nil
}

// AddAs takes the file the host path src resolves to as name in the image (e.g. the
// host's /bin/dash as bin/sh), without the links on the way.
func (h *HostFiles) AddAs(name, src string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return fmt.Errorf("host file %s: %w", src, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("host file %s is not a regular file", src)
	}
	return h.regular(strings.TrimPrefix(path.Clean(name), "/"), real, st)
}

// Put adds a file that is not the host's.
func (h *HostFiles) Put(name string, f File) {
	h.files[strings.TrimPrefix(path.Clean(name), "/")] = f
}

// maxLinks bounds the links followed for one path, as the kernel's ELOOP does.
const maxLinks = 40

func (h *HostFiles) add(p string, links int) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("host path %q is not absolute", p)
	}
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	at := "/"
	for i, part := range parts {
		next := filepath.Join(at, part)
		st, err := os.Lstat(next)
		if err != nil {
			return fmt.Errorf("host file %s: %w", p, err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if links >= maxLinks {
				return fmt.Errorf("host file %s: too many symbolic links", p)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			h.files[strings.TrimPrefix(next, "/")] = File{Link: target}
			if !filepath.IsAbs(target) {
				target = filepath.Join(at, target)
			}
			return h.add(filepath.Join(append([]string{target}, parts[i+1:]...)...), links+1)
		}
		if i < len(parts)-1 {
			at = next
			continue
		}
		switch {
		case st.IsDir():
			return h.tree(next, links)
		case st.Mode().IsRegular():
			return h.regular(strings.TrimPrefix(next, "/"), next, st)
		default:
			return fmt.Errorf("host file %s is neither a file, a directory nor a link", next)
		}
	}
	return nil
}

// tree takes everything below dir; links in it are taken as links, with what they
// lead to.
func (h *HostFiles) tree(dir string, links int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, done := h.files[strings.TrimPrefix(p, "/")]; done {
			return nil
		}
		return h.add(p, links)
	})
}

func (h *HostFiles) regular(name, hostPath string, st fs.FileInfo) error {
	if _, done := h.files[name]; done {
		return nil
	}
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return err
	}
	h.files[name] = File{Data: data, Mode: int64(st.Mode().Perm())}
	if bytes.HasPrefix(data, []byte("\x7fELF")) {
		h.elf = append(h.elf, hostPath)
	}
	return nil
}

// AddLibraries takes the shared libraries and the dynamic loader that the ELF
// programs and libraries taken so far, and the host programs named, need, as the
// dynamic loader finds them here (`ldd`).
func (h *HostFiles) AddLibraries(ctx context.Context, programs ...string) error {
	progs := append(append([]string(nil), h.elf...), programs...)
	if len(progs) == 0 {
		return nil
	}
	libs, err := sharedLibraries(ctx, progs)
	if err != nil {
		return err
	}
	return h.Add(libs...)
}

// sharedLibraries runs ldd on the programs and returns the libraries they link and the
// loader, sorted, each once.
func sharedLibraries(ctx context.Context, progs []string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "ldd", progs...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// ldd exits 1 when a file is not dynamic (a static program needs nothing); its
	// lines say which.
	if err != nil && len(out) == 0 {
		if strings.Contains(stderr.String(), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd: %w: %s", err, stderr.String())
	}
	seen := map[string]bool{}
	var missing []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		// "libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)", the loader
		// "/lib64/ld-linux-x86-64.so.2 (0x...)", and "linux-vdso.so.1 (0x...)",
		// which the kernel provides.
		lib, found, ok := strings.Cut(line, "=>")
		if ok {
			f := strings.Fields(found)
			if len(f) == 0 || f[0] == "not" {
				missing = append(missing, strings.TrimSpace(lib))
				continue
			}
			seen[f[0]] = true
			continue
		}
		if f := strings.Fields(line); len(f) == 2 && filepath.IsAbs(f[0]) && strings.HasPrefix(f[1], "(0x") {
			seen[f[0]] = true
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("libraries not found on this machine: %s", strings.Join(missing, ", "))
	}
	libs := make([]string, 0, len(seen))
	for l := range seen {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	return libs, nil
}

// Files returns what was collected, for Spec.Files.
func (h *HostFiles) Files() map[string]File {
	return h.files
}

// Size is the bytes of the regular files collected.
func (h *HostFiles) Size() int64 {
	var n int64
	for _, f := range h.files {
		n += int64(len(f.Data))
	}
	return n
}
