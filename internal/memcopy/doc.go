// Package memcopy provides NT, the copy behind the shared-memory driver's
// "cachefree" large-message method: a copy whose stores bypass the cache
// (the CPU-only stand-in for the I/OAT DMA offload of seed 004 §3.2).
//
// # Why
//
// Seed 004 §3.3: a CPU copy fills the cache twice, once reading the source
// and once writing the destination, so it starts evicting the application
// once the message exceeds half the cache; above
//
//	DMA_min = cache size / (2 × cores sharing the cache)
//
// offloading wins. On the reference machine (AMD EPYC Zen 4 under KVM, 2
// vCPUs, private 1 MiB L2 per core, 32 MiB L3 shared by both) that is
// 1 MiB / (2×1) = 512 KiB for L2 and 32 MiB / (2×2) = 8 MiB for L3.
//
// # What copy() already does
//
// The runtime's memmove (runtime/memmove_amd64.s, Go 1.26) uses REP MOVSQ
// for copies of 2 KiB or more only on Intel CPUs with ERMS and FSRM, and
// only when dst is 16-byte aligned (runtime/cpuflags_amd64.go). Everywhere
// else with AVX, including this AMD CPU, a forward copy of more than 256
// bytes takes its AVX path: 128 bytes per iteration with ordinary stores
// below 1 MiB (0x100000), and at 1 MiB or more the "gobble_big_data" loop
// with VMOVNTDQ streaming stores, PREFETCHNTA 0x1C0 and 0x280 ahead, and an
// SFENCE. So here copy() is already a streaming copy from 1 MiB up; NT
// differs from it only below 1 MiB, and on Intel machines, where copy()
// of an aligned dst never streams.
//
// # Measurements
//
// go test -bench . -benchtime 0.5s, six interleaved runs, medians by
// benchstat (run-to-run spread mostly ±5–15%). "hot" reuses one buffer
// pair; "cold" cycles through 2 × 256 MiB arenas (16 × L3). Nothing
// allocates: 0 allocs/op for every row. Par(2) is a copy split in two
// halves, one copied by the caller and one by a pooled goroutine, measured
// against NT and not kept (see the end).
//
//	size     hot: copy    NT  Par(2)   cold: copy    NT  Par(2)   GiB/s
//	64 KiB        52.0  51.0    36.2         12.7  18.1     9.0
//	256 KiB       51.7  51.7    41.1         12.0  18.3     9.8
//	1 MiB         47.5  47.7    34.4         17.9  18.4    11.3
//	4 MiB         50.0  49.6    48.6         17.1  17.9    17.8
//	16 MiB        38.9  38.2    49.8         17.5  19.7    21.0
//	64 MiB        20.8  20.7    27.4         18.3  18.4    22.2
//
// Pollution (BenchmarkPollution, thread pinned to one core): time of a
// random-order pass over a 512 KiB working set warmed into L2 before a copy
// of cold data (no copy: 46–48 µs, i.e. every line an L2 hit; ~88 µs means
// the working set was pushed out to L3), and time to read the copied
// message afterwards.
//
//	size     working-set pass: copy    NT  Par(2)   read message: copy    NT   µs
//	64 KiB                       49    47      66                  1.8   3.2
//	256 KiB                      68    53      79                  7.4   9.5
//	1 MiB                        88    87      94                   33    33
//	4 MiB                       100   101     100                  135   138
//	16 MiB                      111   106     105                  558   542
//	64 MiB                     ~300  ~300    ~250 (±100%)         2290  2300
//
// The AVX-512 kernel (one 64-byte VMOVNTDQ per line) measured within noise
// of the AVX2 one everywhere (geomean −2%; Zen 4 executes 512-bit operations
// as two 256-bit halves), so NT uses AVX2; the AVX-512 kernel stays for the comparison.
//
// # Conclusion
//
// Use NT as the driver's "cachefree" method for messages of 256 KiB and
// more on this machine, and copy() below. Seed 004 §3.3's formula gives
// DMA_min = 512 KiB for the 1 MiB L2; the measured switch comes earlier
// because the receiver's own working set already fills half the L2, so the
// copy has only L2 / 2 to pollute: DMA_min = (L2 / 2) / (2 × 1) = 256 KiB.
// Seed 004 §4.2 saw the same shift (I/OAT useful from ~200 KiB in
// Alltoall instead of 1 MiB in ping-pong). At the sizes that matter:
//
//   - 256 KiB, cold data: NT copies 52% faster than copy() (it skips the
//     read-for-ownership of dst) and cuts the slowdown of the working set
//     from +48% to +15%; the receiver then reads the message 2.1 µs slower,
//     against 3.3 µs saved on the copy and 15 µs on the working set.
//   - 64 KiB: NT is faster on cold data too, but the pollution saved (2 µs)
//     and the slower read (1.3 µs) are both within noise: no reason to
//     switch.
//   - Hot data: NT equals copy() at every size.
//   - 1 MiB and more: NT and copy() are the same algorithm on this CPU and
//     measure the same.
//
// Honest limits: above 1 MiB NT stores do not beat copy() here (copy()
// streams too), and neither keeps the working set: reading the source still
// goes through L2 (the hardware prefetchers fill it; no PREFETCHNTA
// distance changed that), so the pass slows ×1.9 at 1 MiB, ×2.2 at
// 4–16 MiB, and at 64 MiB the source sweeps L3 as well. Only a real copy
// engine spares both sides, as the seed notes in §3.3 ("il reste très
// préférable d'utiliser le moteur DMA"). NT is still worth naming
// explicitly above 1 MiB because copy()'s choice depends on the runtime
// version and the CPU vendor.
//
// A copy split over goroutines (Par(2)) is not a cache-free method: it
// gains 20–32% bandwidth only from 16 MiB up, by using a second core that
// an MPI job gives to another rank, loses 19–37% below 4 MiB to the
// goroutine hand-off (tens of µs on this VM, more from a pinned thread),
// and pollutes at least as much as copy(). So the package has none.
package memcopy
