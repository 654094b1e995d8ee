// Package testenv tells the project's tests what kind of run they are in,
// so that the longest can size themselves. .ci/run runs the suite twice:
// under the race detector, which watches the library's goroutines, and
// without it, where end-to-end runs of processes and pure computations go
// at full size; -short is the quick pass for everyday work (README,
// "Tests").
package testenv

import "testing"

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
