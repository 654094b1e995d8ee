//go:build !unix

package proctest

import (
	"fmt"
	"runtime"
	"time"
)

// cpuTime fails: the idle test reads the process's CPU time with
// getrusage, which this OS does not have.
func cpuTime() (time.Duration, error) {
	return 0, fmt.Errorf("the CPU time of a process is read with getrusage, which %s does not have", runtime.GOOS)
}
