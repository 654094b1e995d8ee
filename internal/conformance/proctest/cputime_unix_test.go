//go:build unix

package proctest

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) every thread of this
// process has used so far: getrusage(RUSAGE_SELF).
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
