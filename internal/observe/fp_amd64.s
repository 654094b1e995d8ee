#include "textflag.h"

// func callerFP() uintptr
// The frame pointer of the function calling callerFP: this function has
// no frame of its own, so BP is still its caller's.
TEXT ·callerFP(SB),NOSPLIT|NOFRAME,$0-8
	MOVQ BP, ret+0(FP)
	RET
