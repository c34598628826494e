package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one supervised component.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	exited  chan struct{}
	waitErr error
}

// spawn starts a component of the control plane (see Spawn) in its directory.
func (cp *ControlPlane) spawn(name, bin string, args ...string) (*process, error) {
	p, err := Spawn(cp.Dir, name, bin, args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

// Process is a supervised child process: a control-plane component, or another daemon a
// test environment runs beside it (the kubelet, containerd).
type Process = process

// Spawn starts bin in dir, in a process group of its own, with its output in
// <dir>/<name>.log. The child gets SIGKILL from the kernel when this process dies
// (Pdeathsig), so a test binary that panics or is killed by a timeout leaves no orphan
// behind.
func Spawn(dir, name, bin string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create log for %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// Name is the name the process was spawned with.
func (p *process) Name() string { return p.name }

// Exited is closed once the process has exited.
func (p *process) Exited() <-chan struct{} { return p.exited }

// Tail is the end of the process's log, headed by its name and path.
func (p *process) Tail() string {
	return fmt.Sprintf("--- %s (%s):\n%s", p.name, p.logPath, tail(readFile(p.logPath), 60))
}

// exitError explains an early exit, naming the usual causes found in the log.
func (p *process) exitError() error {
	log := readFile(p.logPath)
	cause := ""
	switch {
	case strings.Contains(log, errPortInUse.Error()):
		cause = ": a port it was given is already in use"
	case strings.Contains(log, "permission denied"):
		cause = ": permission denied (see log)"
	case strings.Contains(log, "member") && strings.Contains(log, "has already been bootstrapped"):
		cause = ": the data directory holds an earlier cluster (stale data directory)"
	}
	return fmt.Errorf("%s exited during start-up (%v)%s; log %s:\n%s", p.name, p.waitErr, cause, p.logPath, tail(log, 20))
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the exit.
func (p *process) Stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
}
