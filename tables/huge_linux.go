package tables

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms Go
// runs Linux on most (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// hugePages asks Linux to back the whole huge pages inside b with huge
// pages (madvise MADV_HUGEPAGE; effective when transparent huge pages are
// "madvise" or "always"), so that lookups at random in a big index or
// arena miss the TLB far less: one entry maps 2 MiB instead of 4 KiB. A
// hint: its failure changes nothing, and b smaller than two huge pages is
// left alone.
func hugePages(b []byte) {
	if len(b) < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	from := (p+hugePage-1)&^(hugePage-1) - p               // the first whole huge page's offset in b
	to := (p+uintptr(len(b)))&^(hugePage-1) - p            // the end of the last one's
	_ = syscall.Madvise(b[from:to], syscall.MADV_HUGEPAGE) // addresses it aligned

}
