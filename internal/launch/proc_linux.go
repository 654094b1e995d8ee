package launch

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// rankProc is one rank's process. Its process group (pgid = pid) holds the
// rank and whatever it starts, so one kill reaches them all.
type rankProc struct {
	rank int
	cmd  *exec.Cmd
	pgid int

	mu     sync.Mutex
	reaped bool // after this, pgid may name someone else's group
}

// startProc starts cmd as a rank: in its own process group, so the
// terminal's Ctrl-C reaches only the launcher (which forwards it) and the
// launcher can signal the rank's whole tree; and with SIGKILL as its
// parent-death signal, so a rank does not outlive a launcher that died.
// cpus, when not nil, are the processors the rank may run on: it
// inherits them from the thread that starts it.
func startProc(rank int, cmd *exec.Cmd, cpus []int) (*rankProc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startOn(cmd, cpus); err != nil {
		return nil, err
	}
	return &rankProc{rank: rank, cmd: cmd, pgid: cmd.Process.Pid}, nil
}

// signal sends sig to the rank's process group and reports whether the
// rank was still alive to receive it. A rank that has already exited (a
// zombie, or reaped) is left alone: its exit is its own, however late the
// launcher gets to it. Until the rank is reaped its pid, and so the group
// id, cannot be reused.
func (p *rankProc) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return false
	}
	// Linux zeroes info when no child is waitable (WNOHANG).
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err == nil && info.Signo == int32(syscall.SIGCHLD) {
		return false
	}
	syscall.Kill(-p.pgid, sig)
	return true
}

// wait blocks until the rank exits, kills what it leaves in its process
// group, and reaps the rank. It then returns; reapGroup collects the rest.
//
// The rank is first waited for without being reaped (waitid WNOWAIT): as a
// zombie it still holds its pid, so killing its group id cannot hit an
// unrelated group that reused the number.
func (p *rankProc) wait() exitStatus {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			break // on another error, Wait below reports it
		}
	}
	p.mu.Lock()
	syscall.Kill(-p.pgid, syscall.SIGKILL)
	p.cmd.Wait() // the status is in ProcessState, also for a non-zero exit
	p.reaped = true
	p.mu.Unlock()

	ps := p.cmd.ProcessState
	if ps == nil {
		return exitStatus{code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus{sig: ws.Signal()}
	}
	return exitStatus{code: ps.ExitCode()}
}

// reapGroup reaps the processes of pgid that became the launcher's
// children when the rank died (see becomeSubreaper); they were killed in
// wait. Without subreaper status there are none, and it returns at once.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-pgid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return // ECHILD: none left
		}
	}
}

// becomeSubreaper makes processes orphaned inside the launcher's tree
// become its children instead of init's, so that reapGroup can reap what
// the ranks left behind. Not every init reaps orphans (a container's often
// does not), and an unreaped zombie still shows in /proc.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// startOn starts cmd on cpus (all the launcher's when nil): the child
// inherits the affinity of the thread that forks it, so this thread takes
// cpus for the start and gives them back after.
func startOn(cmd *exec.Cmd, cpus []int) error {
	if cpus == nil {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var was, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return cmd.Start()
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return cmd.Start()
	}
	defer unix.SchedSetaffinity(0, &was)
	return cmd.Start()
}

// allowedCPUs returns the processors the launcher may run on, ascending.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for c := range 1024 {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}
