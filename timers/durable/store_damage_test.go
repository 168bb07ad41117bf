package durable

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/timers"
)

// damaged returns a mem FS holding a checkpointed store in "state" with a
// few parked records, after applying damage to its pebble database.
func damaged(t *testing.T, damage func(db *pebble.DB) error) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	s := mustOpen(t, "state", memOpts(fs, 1<<20))
	for i := range 5 {
		p := timers.Pos{EventTime: int64(i), Key: "k", Offset: int64(i)}
		if err := s.Park(p, recordAt(p, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpoint(record.Checkpoint{Watermark: -1}, map[string][]byte{"late": {1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if damage != nil {
		db, err := pebble.Open("state", &pebble.Options{FS: fs, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := damage(db); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func writeFile(t *testing.T, fs vfs.FS, name, content string) {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func removeFiles(t *testing.T, fs *vfs.MemFS, match func(string) bool) vfs.FS {
	t.Helper()
	names, err := fs.List("state")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if match(n) {
			if err := fs.Remove("state/" + n); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fs
}

func TestOpenStoreDamage(t *testing.T) {
	set := func(k, v []byte) func(*pebble.DB) error {
		return func(db *pebble.DB) error { return db.Set(k, v, pebble.Sync) }
	}
	validKey := appendPosKey(nil, timers.Pos{EventTime: 2, Key: "k", Offset: 2})
	for _, tc := range []struct {
		name    string
		fs      func(t *testing.T) vfs.FS
		opts    func(*StoreOptions)
		wantErr error
	}{
		{name: "missing dir, expected", fs: func(*testing.T) vfs.FS { return vfs.NewMem() },
			opts: func(o *StoreOptions) { o.MustExist = true }, wantErr: ErrMissing},
		{name: "empty dir, expected", fs: func(t *testing.T) vfs.FS {
			fs := vfs.NewMem()
			if err := fs.MkdirAll("state", 0o755); err != nil {
				t.Fatal(err)
			}
			return fs
		}, opts: func(o *StoreOptions) { o.MustExist = true }, wantErr: ErrMissing},
		{name: "foreign files", fs: func(t *testing.T) vfs.FS {
			fs := vfs.NewMem()
			if err := fs.MkdirAll("state", 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, fs, "state/notes.txt", "hello")
			return fs
		}, wantErr: ErrIncompatible},
		{name: "marker of another version", fs: func(t *testing.T) vfs.FS {
			fs := damaged(t, nil)
			writeFile(t, fs, "state/"+markerName, "signalbox parked store, format 99\n")
			return fs
		}, wantErr: ErrIncompatible},
		{name: "format key of another version", fs: func(t *testing.T) vfs.FS {
			return damaged(t, set(keyFormat, []byte{0, 0, 0, 0, 0, 0, 0, 99}))
		}, wantErr: ErrIncompatible},
		{name: "format key missing", fs: func(t *testing.T) vfs.FS {
			return damaged(t, func(db *pebble.DB) error { return db.Delete(keyFormat, pebble.Sync) })
		}, wantErr: ErrCorrupt},
		{name: "checkpoint garbage", fs: func(t *testing.T) vfs.FS {
			return damaged(t, set(keyCheckpoint, []byte("garbage-garbage")))
		}, wantErr: ErrCorrupt},
		{name: "parked key garbage", fs: func(t *testing.T) vfs.FS {
			return damaged(t, set([]byte{prefixParked, 1, 2}, []byte{0}))
		}, wantErr: ErrCorrupt},
		{name: "parked value garbage", fs: func(t *testing.T) vfs.FS {
			return damaged(t, set(validKey, []byte{1, 7, 7, 7}))
		}, wantErr: ErrCorrupt},
		{name: "pebble files gone", fs: func(t *testing.T) vfs.FS {
			return removeFiles(t, damaged(t, nil), func(n string) bool { return n != markerName })
		}, wantErr: ErrCorrupt},
		{name: "manifest gone", fs: func(t *testing.T) vfs.FS {
			return removeFiles(t, damaged(t, nil), func(n string) bool { return strings.HasPrefix(n, "MANIFEST-") })
		}, wantErr: ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := memOpts(tc.fs(t), 1<<20)
			if tc.opts != nil {
				tc.opts(&opts)
			}
			s, err := OpenStore("state", opts)
			if err == nil {
				_ = s.Close()
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("OpenStore: %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestOpenStoreUndamaged(t *testing.T) {
	opts := memOpts(damaged(t, nil), 1<<20)
	opts.MustExist = true
	s := mustOpen(t, "state", opts)
	defer func() { _ = s.Close() }()
	cp, blobs, err := s.Restore()
	if err != nil || cp == nil || cp.Watermark != -1 || string(blobs["late"]) != "\x01" || s.Len() != 5 {
		t.Fatalf("Restore = %+v %q %v, Len %d", cp, blobs, err, s.Len())
	}
	if _, err := OpenStore("state", opts); err == nil {
		t.Fatal("a second OpenStore of an open store succeeded")
	}
}

func TestResetStore(t *testing.T) {
	fs := damaged(t, func(db *pebble.DB) error { return db.Delete(keyFormat, pebble.Sync) })
	if err := resetStore(fs, "state"); err != nil {
		t.Fatal(err)
	}
	opts := memOpts(fs, 1<<20)
	opts.MustExist = true
	if _, err := OpenStore("state", opts); !errors.Is(err, ErrMissing) {
		t.Fatalf("after reset, OpenStore(MustExist): %v", err)
	}
	opts.MustExist = false
	s := mustOpen(t, "state", opts)
	if cp, _, _ := s.Restore(); s.Len() != 0 || cp != nil {
		t.Fatalf("after reset: Len %d, checkpoint %+v", s.Len(), cp)
	}
	// A store in use is not reset.
	if err := resetStore(fs, "state"); err == nil {
		t.Fatal("reset of an open store succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := resetStore(fs, "missing"); err != nil {
		t.Fatalf("reset of a missing dir: %v", err)
	}
	// Foreign files are never removed.
	writeFile(t, fs, "state/precious.txt", "x")
	if err := resetStore(fs, "state"); err == nil || !strings.Contains(err.Error(), "precious.txt") {
		t.Fatalf("reset with a foreign file: %v", err)
	}
	if _, err := fs.Stat("state/precious.txt"); err != nil {
		t.Fatal(err)
	}
}

// The real file system path, end to end.
func TestResetStoreOnDisk(t *testing.T) {
	dir := t.TempDir() + "/state"
	s, err := OpenStore(dir, StoreOptions{MemoryBudget: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	p := timers.Pos{EventTime: 1}
	if err := s.Park(p, recordAt(p, 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(record.Checkpoint{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = OpenStore(dir, StoreOptions{MustExist: true}); err != nil || s.Len() != 1 {
		t.Fatalf("reopen: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ResetStore(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{MustExist: true}); !errors.Is(err, ErrMissing) {
		t.Fatalf("after ResetStore: %v", err)
	}
}

func TestStoreOptions(t *testing.T) {
	var o StoreOptions
	o.EnsureDefaults()
	if o.MemoryBudget != DefaultMemoryBudget || o.CacheSize != DefaultCacheSize ||
		o.MemTableSize != 32<<20 || o.DiskReserve != 4*32<<20+32<<20 || o.FS == nil || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
	// 256 MiB: two 32 MiB memtables, an 8 MiB cache, a 4 MiB WAL queue
	// (1/64), 1 MiB of write buffers; half the rest, 89.5 MiB, in memory.
	if o.walQueue() != 4<<20 || o.InMemoryBudget() != 179<<19 {
		t.Fatalf("defaults: WAL queue %d, in-memory part %d", o.walQueue(), o.InMemoryBudget())
	}
	// The budget covers pebble's memory (invariant 3): a 16 MiB budget gets
	// 4 MiB memtables (the floor, a quarter of the budget), a 512 KiB cache
	// and a 1 MiB WAL queue, and leaves the in-memory part half of
	// 16 - 8 - 0.5 - 1 - 1, 2.75 MiB.
	small := StoreOptions{MemoryBudget: 16 << 20}
	small.EnsureDefaults()
	if small.MemTableSize != 4<<20 || small.CacheSize != 512<<10 || small.walQueue() != 1<<20 ||
		small.InMemoryBudget() != 11<<18 {
		t.Fatalf("16 MiB: %+v, in-memory part %d", small, small.InMemoryBudget())
	}
	// Up to 16 MiB the two memtables take half the budget; from 32 MiB up, a
	// quarter.
	for budget, mt := range map[int64]uint64{8 << 20: 2 << 20, 32 << 20: 4 << 20, 64 << 20: 8 << 20} {
		o := StoreOptions{MemoryBudget: budget}
		o.EnsureDefaults()
		if o.MemTableSize != mt {
			t.Errorf("budget %d: memtable %d, want %d", budget, o.MemTableSize, mt)
		}
	}
	tiny := StoreOptions{MemoryBudget: 1}
	tiny.EnsureDefaults()
	if tiny.MemTableSize != 1<<20 || tiny.CacheSize != 512<<10 || tiny.InMemoryBudget() != 0 {
		t.Fatalf("1 byte: %+v, in-memory part %d", tiny, tiny.InMemoryBudget())
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []StoreOptions{{MemoryBudget: -1}, {CacheSize: -1}, {DiskReserve: -1}, {MemTableSize: 4 << 30}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", bad)
		}
		if _, err := OpenStore("x", bad); err == nil {
			t.Errorf("OpenStore(%+v) succeeded", bad)
		}
	}
}
