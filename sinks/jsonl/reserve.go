package jsonl

import (
	"fmt"
	"os"
)

// reserveAhead is how far past the bytes written a file sink keeps the
// file's blocks reserved. Blocks reserved in advance, a few MiB at a time,
// make a buffered write a copy into blocks the file system has already
// allocated; otherwise every write allocates its blocks one by one
// (docs/bench.md, "Reserving a JSONL file's blocks ahead").
const reserveAhead = 8 << 20

// reserve reserves the blocks of f's bytes [off, off+n) without changing
// its size (fallocate with FALLOC_FL_KEEP_SIZE on Linux; an error where
// that is not supported). A variable so that tests can make it fail.
var reserve = reserveBlocks

// fileWriter is a regular file that a sink appends to: it keeps the file's
// blocks reserved from half of reserveAhead to reserveAhead past its end
// (every write lands in blocks reserved before it), and stops reserving for
// good at the first refusal (the file system does not support it, or the
// disk is full: the writes then go on as without it). The file's size
// never counts a reserved block, so readers, the side file and a restart
// see only the bytes written.
type fileWriter struct {
	f       *os.File
	off     int64 // the file's size as this writer knows it: where the next write lands
	end     int64 // the file's blocks are reserved up to end
	refused bool
}

// Write writes p at the end of the file, after reserving the blocks up to
// reserveAhead past it when fewer than half of those are.
func (w *fileWriter) Write(p []byte) (int, error) {
	if need := w.off + int64(len(p)); need+reserveAhead/2 > w.end && !w.refused {
		from := max(w.off, w.end)
		if reserve(w.f, from, need+reserveAhead-from) == nil {
			w.end = need + reserveAhead
		} else {
			w.refused = true
		}
	}
	n, err := w.f.Write(p)
	w.off += int64(n)
	return n, err
}

// release gives back the blocks reserved past the file's end: a truncate
// to its own size, which frees them and changes no byte. It cuts nothing
// another writer appended: when the file's size is not what w wrote to, it
// leaves the file alone.
func (w *fileWriter) release() error {
	if w.end <= w.off {
		return nil
	}
	st, err := w.f.Stat()
	if err == nil && st.Size() == w.off {
		err = w.f.Truncate(w.off)
	}
	if err != nil {
		return fmt.Errorf("jsonl: releasing the blocks reserved past the end of %s: %w", w.f.Name(), err)
	}
	w.end = w.off
	return nil
}
