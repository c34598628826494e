package localpod

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
)

// Mount points are directories on the host (/etc/prometheus/config, /alertmanager, ...)
// that every process running local pods shares: the test binaries of several packages run
// at once, and the demo may run beside them. Removing a directory that is a mount point in
// some pod's mount namespace detaches that pod's volume (the kernel lazily unmounts mounts
// on a deleted directory in every namespace), so a directory may go only when no pod of
// any process uses it. Each pod holds a shared flock on a lock file per directory for as
// long as it runs; the last one out takes the lock exclusively, without waiting, and only
// then removes the directory. A count in one process's memory cannot see the others.

// mountPointLocks holds one lock file per mount-point directory ever created by a local
// pod. The files stay (they are empty, and /run is a tmpfs): a directory with a lock file
// is one that local pods made, which is how a later pod knows it may remove it again.
var mountPointLocks = "/run/lookout-localpod/mountpoints"

// heldMountPoint is a directory a pod uses as a mount point, with its shared lock.
type heldMountPoint struct {
	dir  string
	lock *os.File
}

func mountPointLockPath(dir string) string {
	return filepath.Join(mountPointLocks, url.PathEscape(dir)+".lock")
}

func lockMountPoint(dir string, how int) (*os.File, error) {
	f, err := os.OpenFile(mountPointLockPath(dir), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ensureMountPoint makes path exist for the pod's lifetime: every directory from path up
// to the first one that existed before any local pod made it is locked (shared) and
// created when missing. Directories the pod already holds are not locked twice.
func (p *Pod) ensureMountPoint(path string) error {
	if err := os.MkdirAll(mountPointLocks, 0o755); err != nil {
		return fmt.Errorf("create mount point %s: %w", path, err)
	}
	var chain []string // bottom-up
	for dir := filepath.Clean(path); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		_, statErr := os.Stat(dir)
		_, lockErr := os.Stat(mountPointLockPath(dir))
		if statErr == nil && lockErr != nil {
			break // the host's own directory: never ours to remove
		}
		chain = append(chain, dir)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		dir := chain[i]
		if p.holds(dir) {
			continue
		}
		// Locked before it is created: a pod of another process that is removing it
		// holds the lock exclusively until it is gone, and then it is made again here.
		lock, err := lockMountPoint(dir, syscall.LOCK_SH)
		if err != nil {
			return fmt.Errorf("lock mount point %s: %w", dir, err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			lock.Close()
			return fmt.Errorf("create mount point %s: %w", dir, err)
		}
		p.created = append(p.created, heldMountPoint{dir: dir, lock: lock})
	}
	return nil
}

func (p *Pod) holds(dir string) bool {
	for _, h := range p.created {
		if h.dir == dir {
			return true
		}
	}
	return false
}

// releaseMountPoints drops the pod's locks, deepest directory first, and removes each
// directory that no pod of any process holds any more.
func (p *Pod) releaseMountPoints() {
	for i := len(p.created) - 1; i >= 0; i-- {
		h := p.created[i]
		h.lock.Close() // a flock belongs to the open file: this one's shared lock is gone
		lock, err := lockMountPoint(h.dir, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			continue // another pod still uses it (or holds it while making it)
		}
		_ = os.Remove(h.dir) // only empty directories: never data
		lock.Close()
	}
	p.created = nil
}
