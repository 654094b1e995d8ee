//go:build race

package conformance

// raceEnabled reports a race-detector build: its processes start and run
// several times slower, so the longest process tests do less there.
const raceEnabled = true
