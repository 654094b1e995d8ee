//go:build !race

package memcopy

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false
