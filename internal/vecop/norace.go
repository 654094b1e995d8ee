//go:build !race

package vecop

const raceEnabled = false
