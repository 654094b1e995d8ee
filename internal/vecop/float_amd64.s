//go:build amd64 && !purego

#include "textflag.h"
#include "loop_amd64.h"

// The float kernels do to each lane exactly what the scalar Go loop does
// to each element, instruction for instruction, so that the results are
// the same bits, NaN payloads and signs of zero included.
//
// Sum and product: Go compiles d[i] += s[i] to ADDSD s, X(d), with d as
// the first source; x86 returns the first source's NaN (quieted) when both
// are NaN, so d is the first source here too (OP).

// Minimum: x86's MIN(a, b) is a < b ? a : b, so it returns b when either
// is NaN or both are zero. Go's builtin min(x, y) compiles on amd64 to
// (cmd/compile/internal/ssa/_gen/AMD64.rules)
//
//	t1 = MIN(x, y)   wrong if x is NaN, or x = -0 and y = +0
//	t2 = MIN(t1, x)  x's NaN if x is NaN
//	t1 | t2          NaN | anything is a NaN; -0 | +0 = -0
//
// and MINF does the same; the operand order of Go's assembler is the
// reverse of Intel's.
#define MINF(I, d, s) \
	I	s, d, s; \
	I	d, s, d; \
	VPOR	s, d, d

// Maximum: Go compiles max(x, y) as -min(-x, -y), negating by flipping the
// sign bit (Y8 holds the sign bits).
#define MAXF(I, d, s) \
	VPXOR	Y8, d, d; \
	VPXOR	Y8, s, s; \
	MINF(I, d, s); \
	VPXOR	Y8, d, d

// func addPD(dst, src unsafe.Pointer, n uintptr)
TEXT ·addPD(SB), NOSPLIT, $0-24
	LOOP(OP, VADDPD)

// func mulPD(dst, src unsafe.Pointer, n uintptr)
TEXT ·mulPD(SB), NOSPLIT, $0-24
	LOOP(OP, VMULPD)

// func minPD(dst, src unsafe.Pointer, n uintptr)
TEXT ·minPD(SB), NOSPLIT, $0-24
	LOOP(MINF, VMINPD)

// func maxPD(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxPD(SB), NOSPLIT, $0-24
	MOVQ	$0x8000000000000000, AX
	MOVQ	AX, X8
	VPBROADCASTQ	X8, Y8
	LOOP(MAXF, VMINPD)

// func addPS(dst, src unsafe.Pointer, n uintptr)
TEXT ·addPS(SB), NOSPLIT, $0-24
	LOOP(OP, VADDPS)

// func mulPS(dst, src unsafe.Pointer, n uintptr)
TEXT ·mulPS(SB), NOSPLIT, $0-24
	LOOP(OP, VMULPS)

// func minPS(dst, src unsafe.Pointer, n uintptr)
TEXT ·minPS(SB), NOSPLIT, $0-24
	LOOP(MINF, VMINPS)

// func maxPS(dst, src unsafe.Pointer, n uintptr)
TEXT ·maxPS(SB), NOSPLIT, $0-24
	MOVQ	$0x80000000, AX
	MOVQ	AX, X8
	VPBROADCASTD	X8, Y8
	LOOP(MAXF, VMINPS)
