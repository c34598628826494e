package pginstance

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// reaper owns every wait of the process: as PID 1 of a container (or as a
// child subreaper in a test) the manager inherits the backends postgres
// leaves behind when it dies, and must collect them. One goroutine waits for
// any child; the commands the manager starts learn their exit from it, so no
// os/exec Wait races it for a status.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan syscall.WaitStatus
	exited  map[int]syscall.WaitStatus // exits nobody asked for yet
}

func newReaper() *reaper {
	r := &reaper{waiting: map[int]chan syscall.WaitStatus{}, exited: map[int]syscall.WaitStatus{}}
	if os.Getpid() != 1 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGCHLD)
	go func() {
		for range sig {
			r.reap()
		}
	}()
	return r
}

func (r *reaper) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		r.mu.Lock()
		if ch, ok := r.waiting[pid]; ok {
			delete(r.waiting, pid)
			ch <- ws
		} else {
			r.exited[pid] = ws
		}
		r.mu.Unlock()
	}
}

// exit returns a channel that receives pid's exit status once.
func (r *reaper) exit(pid int) <-chan syscall.WaitStatus {
	ch := make(chan syscall.WaitStatus, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ws, ok := r.exited[pid]; ok {
		delete(r.exited, pid)
		ch <- ws
		return ch
	}
	r.waiting[pid] = ch
	// A SIGCHLD that came before the registration was already consumed.
	go r.reap()
	return ch
}

// runner starts PostgreSQL's programs as the postgres OS user.
type runner struct {
	binDir string
	cred   *syscall.Credential // nil: run as ourselves
	uid    int
	gid    int
	env    []string
	reaper *reaper
	log    io.Writer
}

func newRunner(binDir, osUser string, env []string, r *reaper, log io.Writer) (*runner, error) {
	rn := &runner{binDir: binDir, reaper: r, env: env, log: log, uid: os.Getuid(), gid: os.Getgid()}
	if os.Getuid() == 0 {
		u, err := user.Lookup(osUser)
		if err != nil {
			return nil, fmt.Errorf("postgres refuses to run as root and user %q is unknown: %w", osUser, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		rn.uid, rn.gid = uid, gid
		rn.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	return rn, nil
}

func (rn *runner) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(rn.binDir+"/"+name, args...)
	cmd.Env = append(os.Environ(), rn.env...)
	cmd.Dir = "/" // the postgres user may not read the manager's working directory
	// Killed with the manager, as in a container whose PID 1 died.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: rn.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// run runs a program to its end and returns its error with its output.
func (rn *runner) run(name string, args ...string) (string, error) {
	return rn.runIn("/", name, args...)
}

// runIn is run with the working directory dir (pg_upgrade writes there).
func (rn *runner) runIn(dir, name string, args ...string) (string, error) {
	cmd := rn.command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	pw.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.MultiWriter(&out, rn.log), pr)
		pr.Close()
		close(done)
	}()
	ws := <-rn.reaper.exit(cmd.Process.Pid)
	<-done
	if ws.ExitStatus() != 0 || ws.Signaled() {
		return out.String(), fmt.Errorf("%s %s: %s: %s", name, strings.Join(args, " "), describe(ws), lastLines(out.String(), 5))
	}
	return out.String(), nil
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus())
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// chown gives paths to the postgres user when the manager runs as root.
func (rn *runner) chown(paths ...string) error {
	if rn.cred == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, rn.uid, rn.gid); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes a file only the postgres user reads.
func (rn *runner) writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := rn.chown(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
