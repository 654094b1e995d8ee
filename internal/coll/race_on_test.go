//go:build race

package coll

// raceDetector: the race detector slows the single-goroutine simulations
// tenfold and finds nothing in them; the full matrix runs without it.
const raceDetector = true
