package localpod

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A pod with shareProcessNamespace runs its containers in one PID namespace of its
// own, like a kubelet's pod does: a container sees the pod's processes in /proc (and
// can signal them), not the host's. The namespace belongs to an infra process (the
// pause container of a real pod) that is PID 1 in it and reaps orphans; ending it
// ends every process of the namespace.
//
// A PID namespace entered with setns(2) applies to the caller's children only, and a
// /proc shows the PID namespace of the process that mounts it. So a container's
// helper, after its bind mounts, enters the namespace and starts itself once more as
// a child (second stage): that child, inside the namespace and in the container's
// mount namespace, mounts a /proc of the namespace and execs the program. The helper
// stays as the program's parent, passes signals on and exits with its exit status.
const (
	// infraEnv marks the re-executed infra process.
	infraEnv = "LOOKOUT_LOCALPOD_INFRA"
	// procExecEnv carries the second stage's plan.
	procExecEnv = "LOOKOUT_LOCALPOD_PROCEXEC"
)

type procExecPlan struct {
	Argv []string
	Dir  string
}

// maybeInfraOrProcExec runs the infra process or a container's second stage; it
// returns only in a process that is neither.
func maybeInfraOrProcExec() {
	if os.Getenv(infraEnv) != "" {
		runInfra()
	}
	if raw := os.Getenv(procExecEnv); raw != "" {
		var plan procExecPlan
		if err := json.Unmarshal([]byte(raw), &plan); err != nil {
			fail("bad second-stage plan: %v", err)
		}
		// The mount namespace is the container's own, made private by the helper.
		if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			fail("mount /proc of the pod's PID namespace: %v", err)
		}
		execProgram(plan.Argv, plan.Dir, procExecEnv)
	}
}

// runInfra is PID 1 of the pod's namespace: it reaps the orphans the kernel hands it
// until it is told to stop.
func runInfra() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// startInfra starts the infra process of a pod in a new PID namespace and returns it
// with the path of that namespace.
func startInfra(self, logPath string) (*exec.Cmd, string, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	cmd := exec.Command(self)
	cmd.Env = []string{infraEnv + "=1"}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start the pod's PID namespace: %w", err)
	}
	return cmd, "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/pid", nil
}

// runInPIDNamespace enters the PID namespace at path for the children of this thread
// (the caller has locked it), starts the second stage with the program, passes the
// signals it gets on, and exits with the program's status.
func runInPIDNamespace(path string, argv []string, dir string) {
	f, err := os.Open(path)
	if err != nil {
		fail("the pod's PID namespace: %v", err)
	}
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWPID); err != nil {
		fail("enter the pod's PID namespace %s: %v", path, err)
	}
	f.Close()
	raw, err := json.Marshal(procExecPlan{Argv: argv, Dir: dir})
	if err != nil {
		fail("%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(withoutEnv(os.Environ(), mountExecEnv), procExecEnv+"="+string(raw))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// No parent-death signal: the child's parent is outside its namespace, so
	// getppid() is 0 there, and Go's check that the parent is still alive after
	// setting the signal would kill the child at once. The pod's end reaches it
	// anyway: Stop signals the helper's process group and ends the infra process,
	// and the infra process has a parent-death signal of its own, so the
	// namespace ends with the test process even when that is killed.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fail("start %s in the pod's PID namespace: %v", argv[0], err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}

// execProgram replaces this process with argv, without the variable that made it a
// helper.
func execProgram(argv []string, dir, helperEnv string) {
	execProgramFile("", argv, dir, helperEnv)
}

// execProgramFile execs program (argv[0] when empty) with argv.
func execProgramFile(program string, argv []string, dir, helperEnv string) {
	if dir != "" {
		_ = os.Chdir(dir)
	}
	if program == "" {
		program = argv[0]
	}
	err := syscall.Exec(program, argv, withoutEnv(os.Environ(), helperEnv))
	fail("exec %s: %v", argv[0], err)
}

func withoutEnv(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "localpod: "+format+"\n", args...)
	os.Exit(127)
}
