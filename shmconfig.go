package commtune

import (
	"fmt"
	"slices"
	"strings"

	"github.com/commtune/commtune/internal/units"
)

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
	// Ring is each ring's capacity (a power of two ≥ 4K). Default 2 MiB,
	// halved (down to 256 KiB) until one rank's inbound rings fit in 64 MiB.
	// Env: COMMTUNE_SHM_RING.
	Ring int
	// Chunk is how much of a large message one ring record carries with the
	// copy methods; default 128 KiB, at most Ring/4.
	// Env: COMMTUNE_SHM_CHUNK.
	Chunk int
	// NoCMA turns single-copy reads off even where the kernel allows them.
	// Env: COMMTUNE_SHM_CMA=off.
	NoCMA bool
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
	EnvShmCMA     = "COMMTUNE_SHM_CMA"
)

// DefaultShmEager is ShmConfig.Eager's default.
const DefaultShmEager = 16 << 10

// ShmMethods are the names ShmConfig.Method accepts.
var ShmMethods = []string{"auto", "copy", "cma", "vmsplice", "cachefree"}

// DefaultTransports is Config.Transports' default: shared memory between
// ranks of one node, TCP between nodes.
var DefaultTransports = []string{"shm", "tcp"}

func (c *Config) applyShmEnv(lookup func(string) (string, bool)) error {
	get := func(name string) (string, bool) {
		v, ok := lookup(name)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	if v, ok := get(EnvTransports); ok {
		c.Transports = nil
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.Transports = append(c.Transports, t)
			}
		}
	}
	sizes := []struct {
		name string
		set  func(int64)
	}{
		{EnvShmEager, func(n int64) {
			c.Shm.Eager = int(n)
			if n == 0 {
				c.Shm.Eager = -1 // "0" in the environment: nothing eager
			}
		}},
		{EnvShmDMAMin, func(n int64) { c.Shm.DMAMin = n }},
		{EnvShmIovec, func(n int64) { c.Shm.Iovec = int(max(n, 1)) }}, // 0: every payload, as 1
		{EnvShmRing, func(n int64) { c.Shm.Ring = int(n) }},
		{EnvShmChunk, func(n int64) { c.Shm.Chunk = int(n) }},
	}
	if v, ok := get(EnvShmIovec); ok && strings.EqualFold(v, "never") {
		c.Shm.Iovec = -1
		sizes = slices.DeleteFunc(sizes, func(s struct {
			name string
			set  func(int64)
		}) bool {
			return s.name == EnvShmIovec
		})
	}
	for _, s := range sizes {
		if v, ok := get(s.name); ok {
			n, err := units.ParseSize(v)
			if err != nil {
				return fmt.Errorf("commtune: %s: %w", s.name, err)
			}
			s.set(n)
		}
	}
	if v, ok := get(EnvShmMethod); ok {
		c.Shm.Method = v
	}
	if v, ok := get(EnvShmCMA); ok {
		switch strings.ToLower(v) {
		case "off", "0", "false", "no":
			c.Shm.NoCMA = true
		case "on", "1", "true", "yes":
			c.Shm.NoCMA = false
		default:
			return fmt.Errorf("commtune: %s=%q: want on or off", EnvShmCMA, v)
		}
	}
	return nil
}

func (c *Config) checkTransports() error {
	if len(c.Transports) == 0 {
		c.Transports = DefaultTransports
	}
	for _, t := range c.Transports {
		if t != "shm" && t != "tcp" {
			return fmt.Errorf("commtune: transport %q: want shm or tcp", t)
		}
	}
	if !slices.Contains(c.Transports, "tcp") {
		return fmt.Errorf("commtune: transports %v: tcp is needed to reach other nodes", c.Transports)
	}
	if c.Shm.Method == "" {
		c.Shm.Method = "auto"
	}
	if !slices.Contains(ShmMethods, c.Shm.Method) {
		return fmt.Errorf("commtune: shm method %q: want one of %v", c.Shm.Method, ShmMethods)
	}
	if c.Shm.DMAMin < 0 || c.Shm.Ring < 0 || c.Shm.Chunk < 0 {
		return fmt.Errorf("commtune: shm sizes must not be negative")
	}
	return nil
}
