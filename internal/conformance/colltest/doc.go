// Package colltest checks the collective operations through the public
// API against a sequential reference (conformance.CheckCollectives), on
// goroutine ranks and on real processes over TCP and shared memory. It
// holds tests only; the process tests start jobs of their own test
// binary, whose TestMain runs the ranks (conformance.RankMain).
package colltest
