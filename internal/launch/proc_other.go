//go:build !linux

package launch

import (
	"errors"
	"os/exec"
	"syscall"
)

// errNotSupported: the launcher relies on Linux process control
// (PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, waitid WNOWAIT).
var errNotSupported = errors.New("launch: the commtune launcher is supported on Linux only")

type rankProc struct {
	rank int
	pgid int
}

func startProc(int, *exec.Cmd, []int) (*rankProc, error) { return nil, errNotSupported }
func allowedCPUs() []int                                 { return nil }
func (p *rankProc) signal(syscall.Signal) bool           { return false }
func (p *rankProc) wait() exitStatus                     { return exitStatus{code: -1} }
func reapGroup(int)                                      {}
func becomeSubreaper() error                             { return errNotSupported }
