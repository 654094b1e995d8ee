// Package commtune is a message-passing library for Go programs in MPI's
// model: a job is a set of ranks; ranks belong to communicators; they
// exchange tagged messages point to point (Send, Recv, Isend, Irecv, Probe
// and friends) with MPI's matching and ordering rules.
//
// commtune needs no cgo and no system MPI. Ranks are either goroutines of
// one process (Local, for tests and embedded use) or processes started by
// `commtune run -n N -- prog` (Init finds the job from the environment) and
// connected by TCP.
//
// Messages up to a rendezvous threshold travel eagerly (one packet, buffered
// at the receiver if no receive is posted yet, within a bounded memory
// budget); larger ones use a rendezvous and land directly in the receive
// buffer. The thresholds are parameters (Config) that commtune's sampler
// measures per machine.
//
// A rank that dies or closes makes the operations that need it fail with
// ErrPeerLost, naming the rank; nothing hangs on a dead peer.
package commtune
