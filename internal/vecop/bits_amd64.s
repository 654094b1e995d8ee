//go:build amd64 && !purego

#include "textflag.h"
#include "loop_amd64.h"

// The bitwise kernels work on bytes: the bits do not depend on the element
// size.

// func andBits(dst, src unsafe.Pointer, n uintptr)
TEXT ·andBits(SB), NOSPLIT, $0-24
	LOOP(OP, VPAND)

// func orBits(dst, src unsafe.Pointer, n uintptr)
TEXT ·orBits(SB), NOSPLIT, $0-24
	LOOP(OP, VPOR)

// func xorBits(dst, src unsafe.Pointer, n uintptr)
TEXT ·xorBits(SB), NOSPLIT, $0-24
	LOOP(OP, VPXOR)
