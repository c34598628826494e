package localpod

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A mount point another process's pod still uses (it holds the directory's lock, as a
// pod of a test binary of another package does) survives this process's last pod, and
// goes with the last user.
func TestAMountPointStaysWhileAPodOfAnotherProcessUsesIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: mount-point locks live under /run")
	}
	base := t.TempDir()
	target := filepath.Join(base, "etc", "app", "config")

	ours := &Pod{}
	if err := ours.ensureMountPoint(target); err != nil {
		t.Fatal(err)
	}
	// The other process: a lock of its own open file on the same directory.
	theirs, err := lockMountPoint(target, syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	ours.releaseMountPoints()
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("mount point removed while another process's pod uses it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "etc", "app")); err != nil {
		t.Fatalf("its parent removed: %v", err)
	}

	// That pod stops; a later pod of ours takes the directories over and, as the last
	// user, removes them all, down to what existed before.
	theirs.Close()
	later := &Pod{}
	if err := later.ensureMountPoint(target); err != nil {
		t.Fatal(err)
	}
	later.releaseMountPoints()
	if _, err := os.Stat(filepath.Join(base, "etc")); !os.IsNotExist(err) {
		t.Errorf("mount points left behind by the last user: %v", err)
	}
	if _, err := os.Stat(base); err != nil {
		t.Errorf("a directory that existed before was removed: %v", err)
	}
}

// Two pods of one process share a mount point: the first to stop leaves it to the other.
func TestAMountPointSharedByTwoPodsGoesWithTheLastOne(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: mount-point locks live under /run")
	}
	target := filepath.Join(t.TempDir(), "data")
	a, b := &Pod{}, &Pod{}
	for _, p := range []*Pod{a, b, a} { // a twice: held once
		if err := p.ensureMountPoint(target); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.created) != 1 {
		t.Errorf("pod a holds %d locks on one directory", len(a.created))
	}
	a.releaseMountPoints()
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("removed while pod b uses it: %v", err)
	}
	b.releaseMountPoints()
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("left behind after both pods stopped: %v", err)
	}
}
