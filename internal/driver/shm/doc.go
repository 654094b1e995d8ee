// Package shm is commtune's intra-node driver: ranks on one node exchange
// messages through shared memory instead of sockets (seed 004, docs/
// wire-shm.md).
//
// Every rank maps an inbound segment with one single-producer
// single-consumer byte ring per local sender. Small packets are copied into
// the ring and delivered from it; large messages move by one of the
// methods of seed 004 §2–3: "copy" (double-buffering: chunks stream through
// the ring while the receiver drains them), "cachefree" (the same with
// cache-bypassing copies, above DMA_min), "vmsplice" (the sender maps its
// pages into a pipe, the receiver reads them) or "cma" (the receiver reads
// the sender's buffer directly with process_vm_readv: one copy).
//
// A waiting rank polls its rings (driver.Poller); when nobody polls, a
// consumer goroutine sleeps on a FIFO read through the Go netpoller, which
// producers ring only when it sleeps and no poller is at work.
package shm
