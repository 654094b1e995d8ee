//go:build amd64 && !purego

#include "textflag.h"

// Both kernels copy n bytes (a multiple of 256, possibly 0) from src to a
// 64-byte-aligned dst, 256 bytes per iteration, with streaming stores
// (VMOVNTDQ): each line goes to memory through a write-combining buffer
// instead of being read for ownership into the cache, so writing dst
// neither evicts the caller's working set nor pays for reading dst first
// (Intel SDM vol. 1, "Caching of Temporal vs. Non-Temporal Data"). Loads
// are ordinary: on write-back memory VMOVNTDQA is an ordinary load too.
//
// PREFETCHNTA one iteration (256 bytes) ahead, as the runtime's memmove
// does 0x1C0–0x280 ahead in its streaming loop: measured on the reference
// Zen 4, prefetching 512 bytes or more ahead made hot copies of 4–16 MiB
// 15–20% slower, 256 bytes ahead and no prefetch at all were equal to
// copy(). No prefetch distance changed the cache pollution: the hardware
// stream prefetchers bring the source into L2 regardless.
//
// SFENCE at the end orders the weakly-ordered streaming stores before any
// later store, e.g. the ring index that publishes the data to another
// process; VZEROUPPER avoids the AVX→SSE transition penalty in the caller.

// func ntAVX2(dst, src unsafe.Pointer, n uintptr)
TEXT ·ntAVX2(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	SHRQ	$8, CX
	JZ	done
loop:
	PREFETCHNTA	0x100(SI)
	PREFETCHNTA	0x140(SI)
	PREFETCHNTA	0x180(SI)
	PREFETCHNTA	0x1c0(SI)
	VMOVDQU	0x00(SI), Y0
	VMOVDQU	0x20(SI), Y1
	VMOVDQU	0x40(SI), Y2
	VMOVDQU	0x60(SI), Y3
	VMOVDQU	0x80(SI), Y4
	VMOVDQU	0xa0(SI), Y5
	VMOVDQU	0xc0(SI), Y6
	VMOVDQU	0xe0(SI), Y7
	VMOVNTDQ	Y0, 0x00(DI)
	VMOVNTDQ	Y1, 0x20(DI)
	VMOVNTDQ	Y2, 0x40(DI)
	VMOVNTDQ	Y3, 0x60(DI)
	VMOVNTDQ	Y4, 0x80(DI)
	VMOVNTDQ	Y5, 0xa0(DI)
	VMOVNTDQ	Y6, 0xc0(DI)
	VMOVNTDQ	Y7, 0xe0(DI)
	ADDQ	$0x100, SI
	ADDQ	$0x100, DI
	DECQ	CX
	JNZ	loop
	SFENCE
	VZEROUPPER
done:
	RET

// func ntAVX512(dst, src unsafe.Pointer, n uintptr)
TEXT ·ntAVX512(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	SHRQ	$8, CX
	JZ	done
loop:
	PREFETCHNTA	0x100(SI)
	PREFETCHNTA	0x140(SI)
	PREFETCHNTA	0x180(SI)
	PREFETCHNTA	0x1c0(SI)
	VMOVDQU64	0x00(SI), Z0
	VMOVDQU64	0x40(SI), Z1
	VMOVDQU64	0x80(SI), Z2
	VMOVDQU64	0xc0(SI), Z3
	VMOVNTDQ	Z0, 0x00(DI)
	VMOVNTDQ	Z1, 0x40(DI)
	VMOVNTDQ	Z2, 0x80(DI)
	VMOVNTDQ	Z3, 0xc0(DI)
	ADDQ	$0x100, SI
	ADDQ	$0x100, DI
	DECQ	CX
	JNZ	loop
	SFENCE
	VZEROUPPER
done:
	RET
