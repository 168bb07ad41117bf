#include "textflag.h"

// func Record(r *record.Record)
TEXT ·Record(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ r+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 215(AX)
	RET

// func Bytes(b []byte)
TEXT ·Bytes(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ b_base+0(FP), AX
	TESTQ AX, AX
	JZ done
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
done:
	RET
