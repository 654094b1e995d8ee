#include "textflag.h"

// func callerFP() uintptr
// The frame pointer of the function calling callerFP (R29): this function
// has no frame of its own.
TEXT ·callerFP(SB),NOSPLIT|NOFRAME,$0-8
	MOVD R29, ret+0(FP)
	RET
