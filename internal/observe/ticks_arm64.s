#include "textflag.h"

// func ticks() int64
// The generic timer's virtual count, the counter Linux's own clock reads.
TEXT ·ticks(SB),NOSPLIT|NOFRAME,$0-8
	MRS  CNTVCT_EL0, R0
	MOVD R0, ret+0(FP)
	RET
