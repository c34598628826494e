package localpod

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// userHelperEnv makes the test binary a container that reports who it runs as and
// counts its runs in its claim's volume.
const userHelperEnv = "LOCALPOD_TEST_USER_HELPER"

type userInfo struct {
	UID, GID int
	Groups   []int
	Name     string
	Runs     int
}

func userHelperMain() {
	dir := os.Args[len(os.Args)-1]
	info := userInfo{UID: os.Getuid(), GID: os.Getgid()}
	info.Groups, _ = os.Getgroups()
	if u, err := user.Current(); err == nil {
		info.Name = u.Username
	}
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	info.Runs, _ = strconv.Atoi(string(b))
	info.Runs++
	if err := os.WriteFile(filepath.Join(dir, "runs"), []byte(strconv.Itoa(info.Runs)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "user helper:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, "info.json"), out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "user helper:", err)
		os.Exit(1)
	}
}

// unprivilegedCopy copies the test binary where any user may run it (the go tool's
// work directory is its own).
func unprivilegedCopy(t *testing.T, self string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "localpod-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(dir, "helper")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAPodRunsAsItsSecurityContextsUserAndItsClaimOutlivesIt(t *testing.T) {
	self := selfAsRoot(t, "mounts and setuid")
	helper := unprivilegedCopy(t, self)
	claims, err := os.MkdirTemp("", "localpod-claims-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(claims) })
	// A uid and a group the host does not know: the pod's own /etc/passwd names them.
	const uid, fsGroup = 4026, 4027
	spec := corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](uid), RunAsGroup: ptr.To[int64](uid), FSGroup: ptr.To[int64](fsGroup),
		},
		// An emptyDir at /tmp, which hides the host's /tmp, where the program and
		// the pod's files are.
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{
			Name: "db", Command: []string{"/bin/user-helper"}, Args: []string{"/var/lib/db"},
			Env:          []corev1.EnvVar{{Name: userHelperEnv, Value: "1"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/db"}, {Name: "tmp", MountPath: "/tmp"}},
		}},
	}
	run := func() userInfo {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		p, err := Start(ctx, Options{Pod: spec, PodName: "db-0", PodNamespace: "ns", Images: map[string]string{"/bin/user-helper": helper},
			Client: noObjects{}, Dir: t.TempDir(), ClaimsDir: claims})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop()
		ctr := p.Containers["db"]
		select {
		case <-ctr.Exited():
		case <-ctx.Done():
			t.Fatal("the container did not end")
		}
		if ctr.err != nil {
			t.Fatalf("container failed: %v; log:\n%s", ctr.err, tailFile(ctr.LogPath))
		}
		var info userInfo
		if err := json.Unmarshal([]byte(readOrErr(filepath.Join(claims, "data-db-0", "info.json"))), &info); err != nil {
			t.Fatal(err)
		}
		return info
	}
	first := run()
	if first.UID != uid || first.GID != uid {
		t.Errorf("the container ran as %d:%d, want %d:%d", first.UID, first.GID, uid, uid)
	}
	if len(first.Groups) != 1 || first.Groups[0] != fsGroup {
		t.Errorf("supplementary groups %v, want the fsGroup %d alone", first.Groups, fsGroup)
	}
	if first.Name == "" {
		t.Errorf("the container cannot look its user up (PostgreSQL's initdb must)")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(claims, "data-db-0", "runs"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != uid || st.Gid != fsGroup {
		t.Errorf("a file the container wrote in its claim is %d:%d, want %d:%d (fsGroup, setgid directory)", st.Uid, st.Gid, uid, fsGroup)
	}
	if second := run(); second.Runs != 2 {
		t.Errorf("the second pod of the claim counted %d runs, want 2: the claim's data did not outlive the first pod", second.Runs)
	}
}

func TestAContainerThatMustNotRunAsRootAndWouldIsRefused(t *testing.T) {
	_, err := credentialOf(corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}}, corev1.Container{Name: "db"})
	if err == nil {
		t.Fatal("runAsNonRoot without runAsUser was accepted")
	}
}
