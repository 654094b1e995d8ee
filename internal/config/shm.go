package config

// ShmConfig tunes the shared-memory transport between ranks of one node.
// Zero fields mean their defaults.
type ShmConfig struct {
	// Eager is the largest message sent through the ring in one piece; larger
	// ones use a rendezvous and a large-message method. Default: the
	// profile's threshold, else 16 KiB (seed 004 §3.3: a direct copy pays
	// off from 8–16 KB); negative sends every non-empty message by the
	// large-message method.
	// Env: COMMTUNE_SHM_EAGER (0 there means none eager).
	Eager int
	// Iovec is the smallest eager payload written into the ring straight
	// from the user's buffer rather than first copied behind its header.
	// Default: the profile's threshold, else every payload; negative means
	// never. Env: COMMTUNE_SHM_IOVEC (a size, 0 for every payload, or
	// never).
	Iovec int
	// Method forces the large-message method: "copy" (double-buffering
	// through the ring), "cma" (the receiver reads the sender's buffer:
	// one copy), "vmsplice" (pages through a pipe), "cachefree" (copy with
	// cache-bypassing stores), or "auto" (default): the profile's choice by
	// size; without a profile seed 004 §4.1's rule — copy when the two
	// ranks share a cache (the second copy hits it), cma when they share
	// none (else copy), and cachefree from DMAMin up. When the topology
	// cannot tell (no cache listed, or an outer cache whose instances are
	// unknown, as in virtual machines) it copies: a small VM's vCPUs sit
	// under one host L3. Measured on two vCPUs sharing an L3: copy 31
	// GB/s, cma 10 GB/s at 4 MiB; on two vCPUs whose L3 CPUID reports as
	// the host's total: copy 6.8, cma 5.1, cachefree 8.2 GB/s.
	// Env: COMMTUNE_SHM_METHOD.
	Method string
	// DMAMin is the size from which "auto" uses cachefree. Default: the
	// profile's choice, else seed 004 §3.3's DMA_min = cache size / (2 ×
	// cores sharing it) for the two ranks' CPUs, from the machine's
	// topology. Set, it applies with a profile too (the profile then
	// divides the sizes below it among the other methods).
	// Env: COMMTUNE_SHM_DMA_MIN.
	DMAMin int64
	// Ring is each ring's capacity, a power of two from 4K to 1G. Default
	// 2 MiB, halved (down to 256 KiB) until one rank's inbound rings fit in
	// 64 MiB, but never under four chunks when Chunk is set.
	// Env: COMMTUNE_SHM_RING.
	Ring int
	// Chunk is how much of a large message one ring record carries with the
	// copy methods, from 1 byte to 256M and at most Ring/4. Default 128
	// KiB, or Ring/4 when that is less: either set alone is valid, the
	// other following it. Env: COMMTUNE_SHM_CHUNK.
	Chunk int
	// Budget bounds the memory one rank's inbound rings take together as
	// their traffic grows them, at least 4K; default 16 MiB up to 16 ranks
	// on a node (every ring whole up to eight), then an equal share of 256
	// MiB per node, at least 1 MiB. Past it a ring grows only as far
	// as its records need to move on: room for two of a record larger than
	// what the ring has, four chunks of a large message.
	// Env: COMMTUNE_SHM_BUDGET.
	Budget int
	// NoCMA turns single-copy reads off even where the kernel allows them.
	// Env: COMMTUNE_SHM_CMA=off.
	NoCMA bool
	// Queue says whether the ranks of a node talk through per-rank
	// inbound queues, each pair getting a ring of its own only once it is
	// busy (and while the receiver has rings to give), rather than
	// through a ring per pair from its first message: "auto" (default:
	// queues on nodes of more than 16 ranks, where a ring per pair that
	// talks outgrows a queue per rank), "on" or "off". On the queue path
	// messages above 4 KiB go by rendezvous. Env: COMMTUNE_SHM_QUEUE.
	Queue string
}

// Environment variables of the shared-memory transport and transport
// selection.
const (
	EnvTransports = "COMMTUNE_TRANSPORTS"
	EnvShmEager   = "COMMTUNE_SHM_EAGER"
	EnvShmIovec   = "COMMTUNE_SHM_IOVEC"
	EnvShmMethod  = "COMMTUNE_SHM_METHOD"
	EnvShmDMAMin  = "COMMTUNE_SHM_DMA_MIN"
	EnvShmRing    = "COMMTUNE_SHM_RING"
	EnvShmChunk   = "COMMTUNE_SHM_CHUNK"
	EnvShmBudget  = "COMMTUNE_SHM_BUDGET"
	EnvShmCMA     = "COMMTUNE_SHM_CMA"
	EnvShmQueue   = "COMMTUNE_SHM_QUEUE"
)

// ShmQueueModes are the values ShmConfig.Queue accepts.
var ShmQueueModes = []string{"auto", "on", "off"}

// DefaultShmEager is ShmConfig.Eager's default.
const DefaultShmEager = 16 << 10

// ShmMethods are the names ShmConfig.Method accepts.
var ShmMethods = []string{"auto", "copy", "cma", "vmsplice", "cachefree"}

// DefaultTransports is Config.Transports' default: shared memory between
// ranks of one node, TCP between nodes.
var DefaultTransports = []string{"shm", "tcp"}
