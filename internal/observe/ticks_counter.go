//go:build amd64 || arm64

package observe

import (
	"os"
	"runtime"
	"strings"
)

// ticks reads the processor's counter (ticks_amd64.s, ticks_arm64.s).
func ticks() int64

// countersAgree reports whether ticks may time a call on one processor
// and end it on another: on amd64 when Linux itself keeps time by the
// TSC (it checked the counter runs at one rate on every processor, and
// through sleep states); on arm64 always (the architecture's timer is
// the system's).
func countersAgree() bool {
	if runtime.GOARCH == "arm64" {
		return true
	}
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && strings.TrimSpace(string(b)) == "tsc"
}
