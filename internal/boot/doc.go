// Package boot finds the job a process belongs to and exchanges addresses
// between its ranks.
//
// Discover tries a documented, ordered list of sources (see detectors in
// job.go): the commtune launcher (COMMTUNE_* variables, see env.go), then a
// singleton. PMI-1/PMI-2 (MPICH Hydra, Slurm) slot in before the singleton.
//
// Under the commtune launcher, ranks exchange addresses through the
// launcher's key-value service (KVS): Server in server.go, the client in
// client.go, the wire format in message.go and handshake.go, and its state
// machine, free of I/O, in store.go. docs/kvs.md specifies the protocol byte
// by byte.
package boot
