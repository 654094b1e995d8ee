//go:build !race

package testenv

// Race reports a race-detector build.
const Race = false
