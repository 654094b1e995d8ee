// Package testenv tells the project's tests what kind of run they are in,
// so that the longest can size themselves. .ci/run runs the suite twice:
// under the race detector, which watches the library's goroutines, and
// without it, where end-to-end runs of processes and pure computations go
// at full size; -short is the quick pass for everyday work (README,
// "Tests").
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Reduced reports a reduced run: a race-detector build, whose processes
// run 5 to 20 times slower, or -short. Tests call it, not package
// initializers: -short is known once flags are parsed.
func Reduced() bool { return Race || testing.Short() }

// Pick returns reduced in a reduced run, else full: the size of a test's
// run in each.
func Pick[T any](full, reduced T) T {
	if Reduced() {
		return reduced
	}
	return full
}

// SkipUnderRace skips t in a race-detector build, saying why: t is a pure
// computation in one goroutine, or a timing, where the detector sees
// nothing and slows the run 5 to 20 times. The run without it covers t.
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if Race {
		t.Skipf("not under the race detector (%s): the run without it covers this", why)
	}
}

// SkipReduced skips t in a reduced run, saying why: t is an end-to-end
// run of processes (the CLI, the examples under launchers, C programs), a
// timing or a long one, which the full run without the race detector
// covers.
func SkipReduced(t testing.TB, why string) {
	t.Helper()
	switch {
	case Race:
		t.Skipf("not under the race detector (%s): the run without it covers this", why)
	case testing.Short():
		t.Skipf("skipped with -short (%s)", why)
	}
}

// NeedSlurm skips t where the single-node Slurm of scripts/slurm-e2e.sh
// cannot start: in a reduced run (it starts Slurm's daemons and jobs),
// without slurmctld, slurmd, munged and srun, or without root.
func NeedSlurm(t testing.TB) {
	t.Helper()
	SkipReduced(t, "Slurm's daemons and srun starting jobs")
	for _, p := range []string{"slurmctld", "slurmd", "munged", "srun"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (apt-get install slurm-wlm munge); .ci/run installs it", p)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the Slurm daemons")
	}
}
