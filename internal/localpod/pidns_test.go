package localpod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// pidHelperEnv makes the test binary a container of the shared-PID-namespace test:
// --role=peer waits for SIGHUP and writes hup into its volume; --role=looker lists the
// processes it sees in /proc into procs.json, then signals the peer it found there.
const pidHelperEnv = "LOCALPOD_TEST_PID_HELPER"

type seenProcess struct {
	PID     int      `json:"pid"`
	Cmdline []string `json:"cmdline"`
}

func pidHelperMain() {
	var role, dir string
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--role="); ok {
			role = v
		}
		if v, ok := strings.CutPrefix(a, "--dir="); ok {
			dir = v
		}
	}
	switch role {
	case "peer":
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		if err := os.WriteFile(filepath.Join(dir, "peer-ready"), nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		<-hup
		_ = os.WriteFile(filepath.Join(dir, "hup"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		select {} // until the pod stops
	case "looker":
		for {
			if _, err := os.Stat(filepath.Join(dir, "peer-ready")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		var seen []seenProcess
		peer := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
			seen = append(seen, seenProcess{PID: pid, Cmdline: args})
			if bytes.Contains(raw, []byte("--role=peer")) {
				peer = pid
			}
		}
		b, _ := json.Marshal(seen)
		_ = os.WriteFile(filepath.Join(dir, "procs.json.tmp"), b, 0o644)
		_ = os.Rename(filepath.Join(dir, "procs.json.tmp"), filepath.Join(dir, "procs.json"))
		if peer != 0 {
			_ = syscall.Kill(peer, syscall.SIGHUP)
		}
		select {}
	}
	os.Exit(2)
}

func TestContainersOfAPodThatSharesItsProcessNamespaceSeeAndSignalOnlyEachOther(t *testing.T) {
	self := selfAsRoot(t, "mounts and PID namespaces")
	base := t.TempDir()
	dataDir := filepath.Join(base, "volumes", "data")
	container := func(role string) corev1.Container {
		return corev1.Container{
			Name:         role,
			Command:      []string{"/bin/pid-helper"},
			Args:         []string{"--role=" + role, "--dir=/var/lib/pid-helper"},
			Env:          []corev1.EnvVar{{Name: pidHelperEnv, Value: "1"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/pid-helper"}},
		}
	}
	shared := true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, Options{
		Pod: corev1.PodSpec{
			ShareProcessNamespace: &shared,
			Volumes:               []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers:            []corev1.Container{container("peer"), container("looker")},
		},
		PodName:      "shared-pid",
		PodNamespace: "ns",
		Images:       map[string]string{"/bin/pid-helper": self},
		Client:       noObjects{},
		Dir:          base,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	// The looker writes procs.json, then signals the peer, which writes hup: wait
	// for hup, or for a container to end.
	hup := filepath.Join(dataDir, "hup")
	for {
		if _, err := os.Stat(hup); err == nil {
			break
		}
		select {
		case <-p.Containers["peer"].Exited():
			t.Fatalf("peer ended without SIGHUP (%v, infra alive: %v); log:\n%s", p.Containers["peer"].err, syscall.Kill(p.infra.Process.Pid, 0), tailFile(p.Containers["peer"].LogPath))
		case <-p.Containers["looker"].Exited():
			t.Fatalf("looker ended (%v, infra alive: %v); infra: %s; log:\n%s", p.Containers["looker"].err, syscall.Kill(p.infra.Process.Pid, 0), readOrErr(filepath.Join(base, "infra.log")), tailFile(p.Containers["looker"].LogPath))
		case <-ctx.Done():
			t.Fatalf("the peer got no SIGHUP from the looker; procs.json:\n%s", readOrErr(filepath.Join(dataDir, "procs.json")))
		case <-time.After(20 * time.Millisecond):
		}
	}
	var seen []seenProcess
	if err := json.Unmarshal([]byte(readOrErr(filepath.Join(dataDir, "procs.json"))), &seen); err != nil {
		t.Fatal(err)
	}
	// PID 1 is the pod's infra process; then the two containers, nothing of the host.
	roles := map[string]int{}
	for _, s := range seen {
		role := ""
		for _, a := range s.Cmdline {
			if v, ok := strings.CutPrefix(a, "--role="); ok {
				role = v
			}
		}
		if s.PID == 1 {
			role = "infra"
		}
		roles[role]++
	}
	if len(seen) != 3 || roles["infra"] != 1 || roles["peer"] != 1 || roles["looker"] != 1 {
		t.Fatalf("the looker saw %+v, want the infra process as PID 1, the peer and itself", seen)
	}
	// The peer's PID inside the namespace is not its PID on the host.
	inside, err := strconv.Atoi(readOrErr(hup))
	if err != nil {
		t.Fatal(err)
	}
	if inside == p.Containers["peer"].Pid() {
		t.Errorf("peer has the same PID %d inside and outside the pod's namespace", inside)
	}
	infra := p.infra.Process.Pid
	p.Stop()
	if err := syscall.Kill(infra, 0); err == nil {
		t.Errorf("the infra process %d is still running after Stop", infra)
	}
}

func readOrErr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
