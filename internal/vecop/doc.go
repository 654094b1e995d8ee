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
// compare and the branch for every element, which on the reference
// machine (AMD EPYC Zen 4 under KVM) runs three to seven times below the
// bandwidth of copy() for 4- and 8-byte elements, and 25 times below it
// for bytes. The kernels here combine 128 bytes per iteration with AVX2
// and run at copy()'s speed.
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
// Go loop the rest. Elsewhere, on CPUs without AVX2, with the purego build
// tag, and in race builds (whose detector cannot see the accesses of
// assembly), Go loops do everything, eight elements per iteration.
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
package vecop
