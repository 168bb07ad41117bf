package durable

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// fillUntilFull parks records that spill, with a checkpoint every 500, until
// a call fails, and returns that error (nil if none failed within n
// records). wl.saved follows the checkpoints that succeed.
func fillUntilFull(wl *workload, n int) error {
	for range n {
		p := timers.Pos{EventTime: wl.w + 1 + wl.offset, Offset: wl.offset}
		wl.offset++
		r := recordAt(p, 2000)
		if err := wl.s.Park(p, r); err != nil {
			return err
		}
		wl.o[p] = r
		if wl.offset%500 == 0 {
			cp := record.Checkpoint{Watermark: wl.w}
			if err := wl.s.Checkpoint(cp, nil); err != nil {
				return err
			}
			wl.saved, wl.savedCP, wl.blobs = wl.o.clone(), cp, nil
		}
	}
	return nil
}

// runUntilFull runs a random workload on wl.s, checkpoints it, calls
// fillUp, then parks until the store fails, which must be with ErrDiskFull;
// it closes the store, which must work (pebble never saw the failure).
func runUntilFull(t *testing.T, wl *workload, fillUp func(), n int) {
	t.Helper()
	for range 300 {
		wl.step()
	}
	wl.checkpoint()
	fillUp()
	err := fillUntilFull(wl, n)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("got %v, want ErrDiskFull", err)
	}
	t.Logf("surfaced after %d records: %v", wl.offset, err)
	if err := wl.s.Checkpoint(record.Checkpoint{}, nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("failure is not sticky: Checkpoint = %v", err)
	}
	if err := wl.s.Close(); err != nil {
		t.Fatalf("Close after a full disk: %v", err)
	}
}

// TestStoreDiskFull: once the file system reports less free space than the
// reserve, the next commit fails with ErrDiskFull (sticky), Close works
// (pebble never saw the failure), a reopen is refused while the space is
// missing, and once space is back the reopen restores the last checkpoint.
func TestStoreDiskFull(t *testing.T) {
	mem := vfs.NewMem()
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 30, TotalBytes: 2 << 30})
	opts := memOpts(mem, 4<<10)
	opts.DiskReserve = 64 << 20
	wl := &workload{t: t, rng: rand.New(rand.NewPCG(7, 7)), o: parkedSet{}}
	wl.s = mustOpen(t, "state", opts)
	runUntilFull(t, wl, func() {
		mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 20, TotalBytes: 2 << 30})
	}, 10000)
	if _, err := OpenStore("state", opts); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("reopen on a full disk: %v, want ErrDiskFull", err)
	}
	mem.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: 1 << 30, TotalBytes: 2 << 30})
	wl.reopenRestored("state", opts)
}

// TestStoreDiskFullTmpfs is TestStoreDiskFull on a real, small tmpfs that a
// filler file fills up: the store stops with ErrDiskFull before pebble runs
// out of space (which panics inside pebble and kills the process), and once
// the filler is removed a reopen restores the last checkpoint. (Whether a
// reopen before that is refused depends on what pebble's close gave back.)
// It needs the right to mount (root); elsewhere it is skipped.
func TestStoreDiskFullTmpfs(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=24m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) })
	filler := filepath.Join(root, "filler")
	if err := os.WriteFile(filler, make([]byte, 12<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "state")
	opts := StoreOptions{MemoryBudget: 4 << 10, MemTableSize: 1 << 20, CacheSize: 1 << 20, DiskReserve: 8 << 20}
	wl := &workload{t: t, rng: rand.New(rand.NewPCG(8, 8)), o: parkedSet{}}
	wl.s = mustOpen(t, dir, opts)
	runUntilFull(t, wl, func() {}, 1000000)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	wl.reopenRestored(dir, opts)
}
