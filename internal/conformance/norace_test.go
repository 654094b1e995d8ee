//go:build !race

package conformance

// raceEnabled reports a race-detector build (race_test.go).
const raceEnabled = false
