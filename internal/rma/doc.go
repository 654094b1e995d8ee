// Package rma is the machinery of one-sided communication (MPI-3 RMA)
// behind commtune.Window: a window exposes one memory region per rank of a
// communicator, which the others Put into, Get from and Accumulate to
// under the synchronisations MPI defines (fence, locks, post-start-
// complete-wait).
//
// A target is reached one of two ways, chosen per pair when the window is
// made:
//
//   - In place, where the origin can address the target's memory: goroutine
//     ranks of one process (every window), and processes of one node whose
//     window was allocated by the library in a shared mapping
//     (AllocWindow). Put and Get are copies, accumulates are atomic
//     operations on the memory itself, locks are atomic words in the
//     target's header (header.go), as Open MPI's osc/sm does.
//   - Through the target's agent, otherwise: a goroutine of the target's
//     process that receives the origins' requests on the window's own
//     matching context and carries them out (agent.go), as Open MPI's
//     osc/pt2pt does with its progress thread. Passive-target progress
//     comes from the agent alone: a target busy computing, or blocked in
//     any call, still serves locks, puts and gets, because its agent is a
//     goroutine of its own that the Go scheduler runs beside the
//     program's (preemption makes this hold even against a loop that never
//     calls into the library).
//
// Both ways take the same lock words and apply accumulates with the same
// element-wise atomic operations, so origins of either kind may target the
// same rank at once. Element-wise atomicity (MPI 4.0 §12.7.1): accumulates
// on elements of 4 or 8 bytes at aligned addresses are hardware atomic
// operations on each element; other element sizes take the target's
// accumulate lock for the whole operation.
package rma
