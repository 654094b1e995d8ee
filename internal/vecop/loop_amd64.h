// LOOP(G, I) is the body of every kernel, func(dst, src unsafe.Pointer, n
// uintptr) with n a non-zero multiple of 128 (blockSize). Each iteration
// loads 128 bytes of dst into Y0–Y3 and of src into Y4–Y7 (four
// independent chains keep the load and store ports busy), applies
// G(I, d, s), which leaves its result in d, to each pair and stores Y0–Y3
// back. I is the instruction G is built on. G may use Y9–Y12 as scratch;
// Y8 holds a constant the kernel may set before LOOP. Y15 is not used:
// Go's register ABI keeps it zero.
//
// The loads and stores are unaligned (VMOVDQU): the slices may start
// anywhere, and on current CPUs an unaligned access costs nothing unless
// it crosses a cache line. VZEROUPPER avoids the AVX-to-SSE transition
// penalty in the caller.
#define LOOP(G, I) \
	MOVQ	dst+0(FP), DI; \
	MOVQ	src+8(FP), SI; \
	MOVQ	n+16(FP), CX; \
	ADDQ	DI, CX; \
loop: \
	VMOVDQU	0x00(DI), Y0; \
	VMOVDQU	0x20(DI), Y1; \
	VMOVDQU	0x40(DI), Y2; \
	VMOVDQU	0x60(DI), Y3; \
	VMOVDQU	0x00(SI), Y4; \
	VMOVDQU	0x20(SI), Y5; \
	VMOVDQU	0x40(SI), Y6; \
	VMOVDQU	0x60(SI), Y7; \
	G(I, Y0, Y4); \
	G(I, Y1, Y5); \
	G(I, Y2, Y6); \
	G(I, Y3, Y7); \
	VMOVDQU	Y0, 0x00(DI); \
	VMOVDQU	Y1, 0x20(DI); \
	VMOVDQU	Y2, 0x40(DI); \
	VMOVDQU	Y3, 0x60(DI); \
	ADDQ	$0x80, DI; \
	ADDQ	$0x80, SI; \
	CMPQ	DI, CX; \
	JB	loop; \
	VZEROUPPER; \
	RET

// OP sets d = d I s: one instruction, with d as its first source.
#define OP(I, d, s) I s, d, d
