// Package proctest runs the semantics suite, the stress workload, the halo
// check, a flood of unexpected messages and an idle wait over real
// processes, on TCP and on shared memory. It holds tests only; they start
// jobs of their own test binary, whose TestMain runs the ranks
// (conformance.RankMain).
package proctest
