//go:build race

package vecop

// raceEnabled: the race detector cannot see the loads and stores of
// assembly, so race builds reduce in Go where it can check them.
const raceEnabled = true
