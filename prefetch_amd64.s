#include "textflag.h"

// func prefetchRecord(p *record.Record)
TEXT ·prefetchRecord(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 239(AX)
	RET
