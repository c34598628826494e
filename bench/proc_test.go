package main

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestFindPIDByArgFindsExactlyTheProcessWithTheArgument(t *testing.T) {
	marker := fmt.Sprintf("--bench-test-marker=%d-%d", os.Getpid(), time.Now().UnixNano())
	// The shell forks for sleep (it is not the last command): between the fork and the
	// exec, the child carries the shell's arguments too. Wait until it has exec'd.
	cmd := exec.Command("sh", "-c", "sleep 30; exit 0", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pid int
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pid, err = findPIDByArg(marker); err == nil {
			break
		}
	}
	if err != nil || pid != cmd.Process.Pid {
		t.Errorf("got pid %d (%v), want %d", pid, err, cmd.Process.Pid)
	}
	if _, err := findPIDByArg(marker[:len(marker)-1]); err == nil {
		t.Error("a prefix of the argument matched")
	}
}

func TestHostCPUAdvancesAndBusyIsAShare(t *testing.T) {
	a, err := readHostCPU()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	b, err := readHostCPU()
	if err != nil {
		t.Fatal(err)
	}
	if b.total <= a.total || b.busy < a.busy || a.busy > a.total {
		t.Fatalf("readings %+v then %+v", a, b)
	}
	if p := busyPercent(a, b); p <= 0 || p > 100 {
		t.Errorf("busy %.1f%% while this test spun", p)
	}
}
