package durable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// TestStoreCrash: a crash at any point (a crash clone of the file system
// that keeps none, some or all of the unsynced writes) restores exactly the
// parked set, checkpoint and blobs of the last acknowledged Checkpoint.
func TestStoreCrash(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			fs := vfs.NewCrashableMem()
			opts := memOpts(fs, []int64{1 << 10, 8 << 10, 1 << 30}[seed%3])
			wl := &workload{t: t, rng: rng, o: parkedSet{}}
			wl.s = mustOpen(t, "state", opts)
			defer func() { _ = wl.s.Close() }()
			for crash := range 6 {
				for range 50 + rng.IntN(300) {
					wl.step()
				}
				pct := []int{0, 50, 100}[crash%3]
				clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rand.New(rand.NewPCG(seed, uint64(crash)))})
				copts := opts
				copts.FS = clone
				restored := mustOpen(t, "state", copts)
				wl.checkRestored(restored)
				// The restored store keeps working.
				wl.saved.clone().release(t, restored, 1<<62, 0)
				if err := restored.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestStoreDrainsWAL: parking spilled records syncs pebble's WAL at least
// once per walQueue bytes (1 MiB here), without a checkpoint, so that its
// queue of blocks cannot pile up in memory (invariants 3 and 6): after
// parking 4 MiB, a crash keeps at least 3 MiB of WAL.
func TestStoreDrainsWAL(t *testing.T) {
	fs := vfs.NewCrashableMem()
	opts := memOpts(fs, 0)
	opts.MemTableSize = 64 << 20
	s := mustOpen(t, "state", opts)
	defer func() { _ = s.Close() }()
	if opts.walQueue() != 1<<20 {
		t.Fatalf("WAL queue %d", opts.walQueue())
	}
	const value, n = 1000, 4 << 20 / 1000
	for i := range int64(n) {
		p := timers.Pos{EventTime: i, Key: "k", Input: "orders", Offset: i}
		if err := s.Park(p, &record.Record{Topic: "orders", Offset: i, Key: []byte("k"), Value: make([]byte, value)}); err != nil {
			t.Fatal(err)
		}
	}
	if s.SpilledLen() != n {
		t.Fatalf("%d of %d records spilled", s.SpilledLen(), n)
	}
	synced := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	names, err := synced.List("state")
	if err != nil {
		t.Fatal(err)
	}
	var wal int64
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			fi, err := synced.Stat(synced.PathJoin("state", name))
			if err != nil {
				t.Fatal(err)
			}
			wal += fi.Size()
		}
	}
	if wal < 3<<20 {
		t.Fatalf("%d bytes of WAL synced after parking %d", wal, n*value)
	}
}

// faultFS fails every write and sync of pebble's WAL and tables while on.
func faultFS(fs vfs.FS) (vfs.FS, *atomic.Bool) {
	on := new(atomic.Bool)
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !on.Load() || strings.HasSuffix(op.Path, markerName) {
			return nil
		}
		switch op.Kind {
		case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync,
			errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpCreate:
			return errorfs.ErrInjected
		}
		return nil
	})
	return errorfs.Wrap(fs, inj), on
}

// TestStoreWriteError: once writes fail, the failure surfaces as an error
// (at the latest from the Checkpoint that would have acknowledged the
// writes), stays sticky, and a reopen restores the last acknowledged
// checkpoint: no silent loss.
func TestStoreWriteError(t *testing.T) {
	for _, budget := range []int64{1 << 10, 1 << 30} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			fs, on := faultFS(mem)
			opts := memOpts(fs, budget)
			wl := &workload{t: t, rng: rand.New(rand.NewPCG(uint64(budget), 3)), o: parkedSet{}}
			wl.s = mustOpen(t, "state", opts)
			for range 300 {
				wl.step()
			}
			wl.checkpoint()
			on.Store(true)
			var err error
			for i := 0; i < 300 && err == nil; i++ {
				p := timers.Pos{EventTime: wl.w + 1 + int64(i), Offset: wl.offset + int64(i)}
				err = wl.s.Park(p, recordAt(p, 200))
			}
			if err == nil {
				err = wl.s.Checkpoint(record.Checkpoint{Watermark: wl.w}, nil)
			}
			if err == nil {
				t.Fatal("write errors were injected but no call failed")
			}
			if !errors.Is(err, errorfs.ErrInjected) && !strings.Contains(err.Error(), "injected") {
				t.Fatalf("error does not carry the injected error: %v", err)
			}
			t.Logf("surfaced: %v", err)
			if err2 := wl.s.Release(1<<62, 0, func(*record.Record) error { return nil }); err2 == nil {
				t.Fatal("failure is not sticky: Release succeeded")
			}
			p := timers.Pos{EventTime: wl.w + 1000, Offset: wl.offset + 1000}
			if err2 := wl.s.Park(p, recordAt(p, 200)); err2 == nil {
				t.Fatal("failure is not sticky: Park succeeded")
			}
			if err := wl.s.Close(); err == nil {
				t.Fatal("Close of a failed store reports no failure")
			}
			// pebble cannot be closed after a failed WAL write: the process
			// restarts, which a crash clone models.
			opts.FS = mem.CrashClone(vfs.CrashCloneCfg{})
			wl.reopenRestored("state", opts)
		})
	}
}

// TestStoreReadError: a failing read of a spilled record surfaces from
// Release and the record stays parked.
func TestStoreReadError(t *testing.T) {
	mem := vfs.NewMem()
	on := new(atomic.Bool)
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsRead && strings.HasSuffix(op.Path, ".sst") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	opts := memOpts(fs, 1<<10)
	s := mustOpen(t, "state", opts)
	defer func() { _ = s.Close() }()
	for i := range 2000 {
		p := timers.Pos{EventTime: int64(i), Offset: int64(i)}
		if err := s.Park(p, recordAt(p, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// Get the spilled records out of the memtable into tables.
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	n := 0
	err := s.Release(1<<62, 0, func(*record.Record) error { n++; return nil })
	if err == nil {
		t.Fatal("read errors were injected but Release succeeded")
	}
	if s.Len() != 2000-n || n == 2000 {
		t.Fatalf("released %d, %d left: a record was lost", n, s.Len())
	}
}
