//go:build amd64 && !purego

#include "textflag.h"
#include "loop_amd64.h"

// Integer kernels: two's complement wrap-around, as Go's, so the sums and
// products serve signed and unsigned elements alike; only the orderings
// differ.

// 64-bit products (AVX2 has no VPMULLQ): with a = ah·2³² + al and
// b = bh·2³² + bl, a·b mod 2⁶⁴ = al·bl + (ah·bl + al·bh)·2³² mod 2⁶⁴, from
// three 32×32→64 multiplies (VPMULUDQ, I).
#define MULQ(I, d, s) \
	VPSRLQ	$32, d, Y9; \
	I	s, Y9, Y9; \
	VPSRLQ	$32, s, Y10; \
	I	d, Y10, Y10; \
	VPADDQ	Y10, Y9, Y9; \
	VPSLLQ	$32, Y9, Y9; \
	I	s, d, d; \
	VPADDQ	Y9, d, d

// 64-bit orderings (AVX2 has no VPMINSQ): compare, then take s where CMP
// sets the mask. LTQ sets m where s < d (for min), GTQ where s > d (max).
#define LTQ(m, d, s) VPCMPGTQ s, d, m
#define GTQ(m, d, s) VPCMPGTQ d, s, m
#define SELQ(CMP, d, s) \
	CMP(Y9, d, s); \
	VPBLENDVB	Y9, s, d, d

// Unsigned: flipping the sign bits (Y8) maps unsigned order onto signed
// order; the blend still takes the original values.
#define SELUQ(CMP, d, s) \
	VPXOR	Y8, d, Y10; \
	VPXOR	Y8, s, Y11; \
	CMP(Y9, Y10, Y11); \
	VPBLENDVB	Y9, s, d, d

// SIGNQ sets Y8 to the sign bit of each quadword.
#define SIGNQ \
	MOVQ	$0x8000000000000000, AX; \
	MOVQ	AX, X8; \
	VPBROADCASTQ	X8, Y8

// func addQ(dst, src unsafe.Pointer, n uintptr)
TEXT ·addQ(SB), NOSPLIT, $0-24
	LOOP(OP, VPADDQ)

// func addD(dst, src unsafe.Pointer, n uintptr)
TEXT ·addD(SB), NOSPLIT, $0-24
	LOOP(OP, VPADDD)

// func addW(dst, src unsafe.Pointer, n uintptr)
TEXT ·addW(SB), NOSPLIT, $0-24
	LOOP(OP, VPADDW)

// func addB(dst, src unsafe.Pointer, n uintptr)
TEXT ·addB(SB), NOSPLIT, $0-24
	LOOP(OP, VPADDB)

// func mulQ(dst, src unsafe.Pointer, n uintptr)
TEXT ·mulQ(SB), NOSPLIT, $0-24
	LOOP(MULQ, VPMULUDQ)

// func mulD(dst, src unsafe.Pointer, n uintptr)
TEXT ·mulD(SB), NOSPLIT, $0-24
	LOOP(OP, VPMULLD)

// func mulW(dst, src unsafe.Pointer, n uintptr)
TEXT ·mulW(SB), NOSPLIT, $0-24
	LOOP(OP, VPMULLW)

// func minSQ(dst, src unsafe.Pointer, n uintptr)
TEXT ·minSQ(SB), NOSPLIT, $0-24
	LOOP(SELQ, LTQ)

// func maxSQ(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxSQ(SB), NOSPLIT, $0-24
	LOOP(SELQ, GTQ)

// func minUQ(dst, src unsafe.Pointer, n uintptr)
TEXT ·minUQ(SB), NOSPLIT, $0-24
	SIGNQ
	LOOP(SELUQ, LTQ)

// func maxUQ(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxUQ(SB), NOSPLIT, $0-24
	SIGNQ
	LOOP(SELUQ, GTQ)

// func minSD(dst, src unsafe.Pointer, n uintptr)
TEXT ·minSD(SB), NOSPLIT, $0-24
	LOOP(OP, VPMINSD)

// func maxSD(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxSD(SB), NOSPLIT, $0-24
	LOOP(OP, VPMAXSD)

// func minUD(dst, src unsafe.Pointer, n uintptr)
TEXT ·minUD(SB), NOSPLIT, $0-24
	LOOP(OP, VPMINUD)

// func maxUD(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxUD(SB), NOSPLIT, $0-24
	LOOP(OP, VPMAXUD)

// func minSW(dst, src unsafe.Pointer, n uintptr)
TEXT ·minSW(SB), NOSPLIT, $0-24
	LOOP(OP, VPMINSW)

// func maxSW(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxSW(SB), NOSPLIT, $0-24
	LOOP(OP, VPMAXSW)

// func minUW(dst, src unsafe.Pointer, n uintptr)
TEXT ·minUW(SB), NOSPLIT, $0-24
	LOOP(OP, VPMINUW)

// func maxUW(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxUW(SB), NOSPLIT, $0-24
	LOOP(OP, VPMAXUW)

// func minSB(dst, src unsafe.Pointer, n uintptr)
TEXT ·minSB(SB), NOSPLIT, $0-24
	LOOP(OP, VPMINSB)

// func maxSB(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxSB(SB), NOSPLIT, $0-24
	LOOP(OP, VPMAXSB)

// func minUB(dst, src unsafe.Pointer, n uintptr)
TEXT ·minUB(SB), NOSPLIT, $0-24
	LOOP(OP, VPMINUB)

// func maxUB(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxUB(SB), NOSPLIT, $0-24
	LOOP(OP, VPMAXUB)
