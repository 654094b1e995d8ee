// Package commtune is a message-passing library for Go programs in MPI's
// model: a job is a set of ranks; ranks belong to communicators; they
// exchange tagged messages point to point (Send, Recv, Isend, Irecv, Probe
// and friends) with MPI's matching and ordering rules, and run collective
// operations (Barrier, Bcast, Reduce, Allreduce, Scatter, Gather …,
// ReduceScatter, Scan, Exscan, and their v-variants and nonblocking forms)
// and halo exchanges on Cartesian grids (Cart, Halo).
//
// commtune needs no cgo and no system MPI. Ranks are either goroutines of
// one process (Local, for tests and embedded use) or processes started by
// `commtune run -n N -- prog`, MPICH's Hydra or Slurm (Init finds the job
// from the environment). Ranks of one node reach each other through shared
// memory (on Linux), ranks of different nodes over TCP, on one or several
// network rails.
//
// Messages up to a rendezvous threshold travel eagerly (one packet, buffered
// at the receiver if no receive is posted yet, within a bounded memory
// budget); larger ones use a rendezvous and land directly in the receive
// buffer. The thresholds, the shared-memory method of each size and the
// split of large messages over rails come from a profile commtune's
// sampler measures per machine (`commtune sample`); explicit settings
// (Config, COMMTUNE_* variables) win. Collective algorithms come from a
// fixed decision table or a lottery scheduler that learns from the calls'
// times; a Halo selects its implementation at run time.
//
// A rank that dies or closes makes the operations that need it fail with
// ErrPeerLost, naming the rank; nothing hangs on a dead peer.
package commtune
