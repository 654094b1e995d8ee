// Package vecop provides the element-wise kernels of the predefined
// reductions: dst[i] = dst[i] ⊕ src[i] for sums, products, minima and
// maxima of floats and integers, and the bitwise and, or and exclusive or.
//
// # Why
//
// A reduction of a large message (Reduce, Allreduce) combines a received
// buffer into the caller's, element by element: two loads and a store per
// element and one arithmetic instruction. That is bandwidth-bound work,
// but a Go loop over one element at a time is bound by instructions
// instead: a load, the operation, a store, the index increment, the
// compare and the branch for every element. On the reference machine (AMD
// EPYC Zen 4 under KVM) such a loop over 1 MiB that the caches hold is
// two to seven times slower than the kernels here for 4- and 8-byte
// elements, and 17 to 26 times for bytes. The kernels combine 128 bytes
// per iteration with AVX2, and take the same time whatever the operation
// and the element size: the time of moving the data.
//
// # Same bits as the scalar loop
//
// Each kernel gives exactly the bits the scalar loop dst[i] op= src[i] (or
// dst[i] = min(dst[i], src[i])) gives, on every input: NaN payloads, signed
// zeros, infinities, integer wrap-around. A reduction's result must not
// depend on the CPU it runs on, nor on whether a buffer's length made the
// tail of it go through a different path. The assembly does to each lane
// what the compiled scalar loop does to each element, instruction for
// instruction: the same operand order for additions and products (which
// decides which of two NaNs comes out), and Go's sequence for its builtin
// min and max, whose NaN and ±0 results x86's MIN and MAX alone would get
// wrong. The tests compare every path with the scalar loop bit for bit.
//
// Which of two NaNs a Go float addition or product returns is not defined
// by the language: the compiler takes the operation as commutative and may
// order the operands either way. On amd64 the Go loops here are compiled
// with the scalar loop's order, as the tests check; on other architectures
// a sum or product of two NaNs may come out as the other NaN than the
// scalar loop's (still a NaN).
//
// # Paths
//
// On amd64 with AVX2 (x/sys/cpu, which also checks that the OS saves the
// YMM registers), assembly kernels combine the longest prefix that is a
// whole number of 128-byte blocks, four YMM registers per iteration, and a
// Go loop the rest. Elsewhere, on CPUs without AVX2 and with the purego
// build tag, Go loops do everything, eight elements per iteration. Race
// builds run the plain one-element loop: the detector cannot see the
// accesses of assembly, and its instrumentation changes how the compiler
// orders the operands of the unrolled loop's additions.
//
// 64-bit minima and maxima, which have no AVX2 instruction, compare
// (VPCMPGTQ, on sign-flipped values for unsigned order) and blend; 64-bit
// products, which have none either, are built from three 32×32-bit
// multiplies. There is no kernel for 8-bit products (x86 has no byte
// multiply); the callers keep a scalar loop for those.
//
// # Contract
//
// Every function combines src into dst for each element of dst. src must
// be at least as long as dst, or the function panics before writing. dst
// and src must be the same slice or not overlap.
//
// # Measurements
//
// BenchmarkReduce on the reference machine (2 vCPUs, 1 MiB L2 per core,
// 32 MiB L3; other jobs running), nine rounds of go test -bench Reduce
// -benchtime 0.2s, each round a new process running every kernel and its
// baselines one after the other; medians of the times (µs for 1 MiB of
// dst) and of each round's ratios. "scalar" is the one-element loop the
// collective package used before, "go" the unrolled Go loop, "asm" the
// AVX2 kernel, "copy" copy() of 1 MiB of the same data. 0 allocations
// everywhere.
//
//	kernel         asm     go  scalar   copy   scalar/asm  asm/copy
//	sum float64   26.2   49.5    47.7   40.8          2.0      0.56
//	sum float32   23.3  100.8   172.3   40.5          6.9      0.59
//	prod float64  22.7   47.6    45.0   40.3          2.0      0.57
//	min float64   22.6   68.4    78.2   40.8          3.4      0.58
//	max float64   23.1   89.4    88.4   40.4          4.0      0.58
//	sum int64     21.7   57.8    50.9   40.8          2.4      0.53
//	prod int64    24.2   70.2    58.0   39.6          2.5      0.60
//	min int64     23.3   60.3    58.1   40.7          2.5      0.57
//	max uint64    25.3   60.2    55.3   39.2          2.2      0.65
//	sum int32     22.9  111.5    99.5   39.7          4.5      0.58
//	min uint32    22.4  115.5   110.1   43.1          5.0      0.52
//	sum int8      22.6  412.3   396.4   40.1           17      0.57
//	max uint8     22.4  441.8   600.1   39.5           26      0.58
//	xor uint64    21.8   46.6    51.5   40.7          2.3      0.55
//
// The AVX2 kernels all take the same time, whatever the operation and the
// element size: the data movement is the cost, so a wider unroll or
// AVX-512 (which Zen 4 executes as two 256-bit halves) has nothing left to
// gain. They are faster than copy() here because at 1 MiB copy() switches
// to streaming stores that go to memory, while a reduction's result stays
// in the cache for whatever reads it next. The one-element loop's times
// vary more than the kernels': in an earlier build of the same benchmark,
// measured minutes apart, sum float64 took 84 µs and sum float32 86 µs
// (the kernels 23 µs), which made the first 3.6 times slower than the
// AVX2 kernel instead of 2.0. The unrolled Go loop gains on the scalar one
// only where loop overhead dominates and the loop does not already store
// one element per cycle; elsewhere it is even.
//
// Out of the caches the gain goes: at 32 MiB of dst (64 MiB with src) every
// loop waits for memory, the AVX2 sum float64 kernel and the scalar loop
// took the same time (3.2–3.6 ms) and copy() 1.5 times less, as it moves
// two buffers' worth of data where a reduction moves three.
package vecop
