package image

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// file is one entry of a layer or of the layout tarball. Names are relative, directories
// end in "/"; an entry with a link is a symbolic link to it.
type file struct {
	name  string
	mode  int64
	dir   bool
	link  string
	uid   int
	data  []byte
	mtime time.Time
}

// writeTar writes the files in the given order with fixed owners and times, so the same
// files give the same bytes. PAX headers would carry access times; USTAR has none.
func writeTar(w io.Writer, files []file) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.uid,
			ModTime: f.mtime.UTC().Truncate(time.Second),
			Format:  tar.FormatUSTAR,
		}
		switch {
		case f.dir:
			h.Typeflag = tar.TypeDir
		case f.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.link, 0o777
		default:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar header for %s: %w", f.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.data); err != nil {
				return fmt.Errorf("tar content of %s: %w", f.name, err)
			}
		}
	}
	return tw.Close()
}

// tarDir writes the tree under root (an OCI layout) as a tarball in lexical order, every
// entry owned by root with the given time.
func tarDir(w io.Writer, root string, mtime time.Time) error {
	var files []file
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			files = append(files, file{name: rel + "/", mode: 0o755, dir: true, mtime: mtime})
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, file{name: rel, mode: 0o644, data: data, mtime: mtime})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read OCI layout %s: %w", root, err)
	}
	sort.Slice(files, func(i, j int) bool {
		return strings.TrimSuffix(files[i].name, "/") < strings.TrimSuffix(files[j].name, "/")
	})
	return writeTar(w, files)
}

// untar reads a tarball into a map of name → content (directories omitted), rejecting
// names that would leave the destination.
func untar(r io.Reader) (map[string][]byte, error) {
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Clean(h.Name)
		if strings.HasPrefix(name, "../") || path.IsAbs(name) {
			return nil, fmt.Errorf("tar entry %q leaves the archive", h.Name)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read tar entry %s: %w", h.Name, err)
		}
		out[name] = b
	}
}
