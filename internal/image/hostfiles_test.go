package image

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostFilesKeepTheLinksOnTheWayAndTakeWhatTheyLeadTo(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"usr/lib", "usr/share/zoneinfo/Etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/lib/libx.so.1.2", "library", 0o755)
	link("lib", "usr/lib")                   // a merged /usr
	link("usr/lib/libx.so.1", "libx.so.1.2") // a soname
	write("usr/share/zoneinfo/Etc/UTC", "TZif", 0o644)
	link("usr/share/zoneinfo/UTC", "Etc/UTC")
	link("usr/share/zoneinfo/posix", ".") // a link back into the tree being walked
	link("usr/share/zoneinfo/localtime", filepath.Join(dir, "etc-localtime"))
	link("etc-localtime", filepath.Join(dir, "usr/share/zoneinfo/Etc/UTC"))

	h := NewHostFiles()
	if err := h.Add(filepath.Join(dir, "lib/libx.so.1"), filepath.Join(dir, "usr/share/zoneinfo")); err != nil {
		t.Fatal(err)
	}
	if err := h.AddAs("bin/x", filepath.Join(dir, "lib/libx.so.1")); err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimPrefix(dir, "/") + "/"
	want := map[string]File{
		prefix + "lib":                          {Link: "usr/lib"},
		prefix + "usr/lib/libx.so.1":            {Link: "libx.so.1.2"},
		prefix + "usr/lib/libx.so.1.2":          {Data: []byte("library"), Mode: 0o755},
		prefix + "usr/share/zoneinfo/Etc/UTC":   {Data: []byte("TZif"), Mode: 0o644},
		prefix + "usr/share/zoneinfo/UTC":       {Link: "Etc/UTC"},
		prefix + "usr/share/zoneinfo/posix":     {Link: "."},
		prefix + "usr/share/zoneinfo/localtime": {Link: filepath.Join(dir, "etc-localtime")},
		prefix + "etc-localtime":                {Link: filepath.Join(dir, "usr/share/zoneinfo/Etc/UTC")},
		"bin/x":                                 {Data: []byte("library"), Mode: 0o755},
	}
	got := h.Files()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s was not taken", name)
			continue
		}
		if string(g.Data) != string(w.Data) || g.Mode != w.Mode || g.Link != w.Link {
			t.Errorf("%s: got %q mode %o link %q, want %q mode %o link %q", name, g.Data, g.Mode, g.Link, w.Data, w.Mode, w.Link)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s was taken too", name)
		}
	}
	if h.Size() != int64(len("library")*2+len("TZif")) {
		t.Errorf("size %d", h.Size())
	}
}

func TestHostFilesTakeTheLibrariesAProgramLinks(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHostFiles()
	if err := h.AddLibraries(context.Background(), sh); err != nil {
		t.Fatal(err)
	}
	var libc, loader bool
	for name, f := range h.Files() {
		libc = libc || (strings.HasSuffix(name, "/libc.so.6") && len(f.Data) > 0)
		loader = loader || strings.Contains(name, "ld-linux")
	}
	if !libc || !loader {
		t.Errorf("the libraries of %s miss libc (%v) or the loader (%v): %v", sh, libc, loader, names(h.Files()))
	}
}

func names(files map[string]File) []string {
	var out []string
	for n := range files {
		out = append(out, n)
	}
	return out
}
