// Package shmtest runs jobs of real processes over shared memory with
// each of its large-message methods forced: every size byte-exact, writers
// and readers crossing on full rings, and single-copy reads unavailable.
// It holds tests only; they start jobs of their own test binary, whose
// TestMain runs the ranks (conformance.RankMain).
package shmtest
