// Package faulttest kills a rank of a job of real processes, in a
// point-to-point ring and in the middle of collectives, over TCP and
// shared memory: every survivor must fail soon with ErrPeerLost naming it,
// and nothing of the job may remain. It holds tests only; they start jobs
// of their own test binary, whose TestMain runs the ranks
// (conformance.RankMain).
package faulttest
