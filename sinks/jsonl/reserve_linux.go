package jsonl

import (
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: allocate without growing the file.
const fallocKeepSize = 0x01

// reserveBlocks allocates f's blocks for bytes [off, off+n), its size
// unchanged, retrying a call that a signal interrupted.
func reserveBlocks(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Fallocate(int(fd), fallocKeepSize, off, n); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
