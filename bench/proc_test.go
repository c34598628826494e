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
	cmd := exec.Command("sh", "-c", "sleep 30", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid, err := findPIDByArg(marker)
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
