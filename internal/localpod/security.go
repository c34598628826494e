package localpod

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// What a kubelet and its runtime do with a pod's securityContext, done here for the
// programs that care (PostgreSQL refuses to run as root): the helper takes the user,
// group and supplementary groups after its mounts and before the exec; fsGroup owns the
// writable volumes (group, setgid bit) and the Secret and ConfigMap files; and, as an
// image carries an /etc/passwd naming its user, a pod whose user the host does not know
// gets a passwd (and group) file of its own that does.

// credential is who a container's program runs as.
type credential struct {
	UID    uint32
	GID    uint32
	Groups []uint32
}

// credentialOf is the container's user from its own and the pod's securityContext, nil
// when neither names a user (the program runs as the helper does, root). A container
// that must not run as root and would is refused, as the kubelet refuses to start it.
func credentialOf(pod corev1.PodSpec, c corev1.Container) (*credential, error) {
	var uid, gid *int64
	nonRoot := false
	if sc := pod.SecurityContext; sc != nil {
		uid, gid = sc.RunAsUser, sc.RunAsGroup
		nonRoot = sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
	}
	if uid == nil || *uid == 0 {
		if nonRoot {
			return nil, fmt.Errorf("container %s has runAsNonRoot and would run as root (no runAsUser)", c.Name)
		}
		return nil, nil
	}
	cred := &credential{UID: uint32(*uid)}
	if gid != nil {
		cred.GID = uint32(*gid)
	}
	if sc := pod.SecurityContext; sc != nil {
		for _, g := range sc.SupplementalGroups {
			cred.Groups = append(cred.Groups, uint32(g))
		}
		if sc.FSGroup != nil {
			cred.Groups = append(cred.Groups, uint32(*sc.FSGroup))
		}
	}
	return cred, nil
}

// become switches the helper to cred: groups first, while it still may. Go applies
// each to every thread of the process.
func become(cred *credential) error {
	groups := make([]int, 0, len(cred.Groups))
	for _, g := range cred.Groups {
		groups = append(groups, int(g))
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups %v: %w", groups, err)
	}
	if err := syscall.Setgid(int(cred.GID)); err != nil {
		return fmt.Errorf("setgid %d: %w", cred.GID, err)
	}
	if err := syscall.Setuid(int(cred.UID)); err != nil {
		return fmt.Errorf("setuid %d: %w", cred.UID, err)
	}
	return nil
}

// fsGroupOf is the pod's fsGroup, -1 without one.
func fsGroupOf(pod corev1.PodSpec) int {
	if sc := pod.SecurityContext; sc != nil && sc.FSGroup != nil {
		return int(*sc.FSGroup)
	}
	return -1
}

// ownWritable gives a writable volume's directory to the pod: world-writable as the
// kubelet makes an emptyDir, or, with an fsGroup, the group's with the setgid bit, so
// that what the pod writes there stays the group's.
func ownWritable(dir string, fsGroup int, emptyDir bool) error {
	if fsGroup < 0 {
		if emptyDir {
			return os.Chmod(dir, 0o777)
		}
		return nil
	}
	if err := os.Chown(dir, -1, fsGroup); err != nil {
		return err
	}
	return os.Chmod(dir, 0o775|os.ModeSetgid)
}

// userFiles writes the pod's own /etc/passwd and /etc/group when one of its containers
// runs as a user or group the host does not know (initdb and postgres look their user
// up), and returns their paths, empty when the host's files serve.
func userFiles(o Options) (passwd, group string, err error) {
	var users, groups []string
	for _, c := range append(append([]corev1.Container(nil), o.Pod.InitContainers...), o.Pod.Containers...) {
		cred, err := credentialOf(o.Pod, c)
		if err != nil || cred == nil {
			continue
		}
		if _, err := user.LookupId(strconv.Itoa(int(cred.UID))); err != nil {
			users = append(users, fmt.Sprintf("user%d:x:%d:%d:localpod image user:/tmp:/usr/sbin/nologin\n", cred.UID, cred.UID, cred.GID))
		}
		for _, g := range append([]uint32{cred.GID}, cred.Groups...) {
			if _, err := user.LookupGroupId(strconv.Itoa(int(g))); err != nil {
				groups = append(groups, fmt.Sprintf("group%d:x:%d:\n", g, g))
			}
		}
	}
	if len(users) == 0 && len(groups) == 0 {
		return "", "", nil
	}
	write := func(host, name string, extra []string) (string, error) {
		b, err := os.ReadFile(host)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		seen := map[string]bool{}
		for _, e := range extra {
			if !seen[e] {
				seen[e] = true
				b = append(b, e...)
			}
		}
		path := filepath.Join(o.Dir, name)
		return path, os.WriteFile(path, b, 0o644)
	}
	if passwd, err = write("/etc/passwd", "passwd", users); err != nil {
		return "", "", err
	}
	group, err = write("/etc/group", "group", groups)
	return passwd, group, err
}

// anyCredential says whether a container of the pod runs as a user of its own.
func anyCredential(pod corev1.PodSpec) bool {
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		if cred, err := credentialOf(pod, c); err != nil || cred != nil {
			return true
		}
	}
	return false
}

// fileMode is a Secret or ConfigMap volume's defaultMode (the API's default, 0644).
func fileMode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m) & os.ModePerm
}
