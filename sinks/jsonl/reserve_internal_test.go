//go:build linux

package jsonl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/signalbox/signalbox/record"
)

// reserveRecords returns n records of about 200 bytes of envelope each.
func reserveRecords(from, n int) []record.Record {
	rs := make([]record.Record, n)
	for i := range rs {
		o := from + i
		rs[i] = record.Record{Topic: "events", Partition: int32(o % 3), Offset: int64(o), Key: fmt.Appendf(nil, "i-%03d", o%1000),
			EventTime: 1_795_000_000_000 + int64(o)*150, Value: fmt.Appendf(nil, `{"i":%d,"pad":"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"}`, o)}
	}
	return rs
}

// allocated returns the bytes of the blocks the file at path holds.
func allocated(t *testing.T, path string) (size, blocks int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size(), st.Sys().(*syscall.Stat_t).Blocks * 512
}

// skipWithoutReserve skips the test where the temporary directory's file
// system does not reserve blocks.
func skipWithoutReserve(t *testing.T, dir string) {
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := reserveBlocks(f, 0, 1<<20); err != nil {
		t.Skipf("the file system of %s reserves no blocks: %v", dir, err)
	}
}

// writeAll writes rs through s in batches of 1000, flushing after each,
// and calls check after each flush.
func writeAll(t *testing.T, s *Sink, rs []record.Record, check func()) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < len(rs); i += 1000 {
		if err := s.Write(ctx, rs[i:min(i+1000, len(rs))]); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check()
		}
	}
}

// want is what a sink writes of rs to a writer.
func want(t *testing.T, rs []record.Record) []byte {
	var buf bytes.Buffer
	s := New(&buf, Options{})
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAll(t, s, rs, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFileBlocksReservedAhead: while a file sink writes, the file holds
// blocks reserved past its end (at least half of reserveAhead, more than a
// buffer, so that no write allocates its own), and its size counts only
// the bytes written;
// Close gives the reserved blocks back. The file holds exactly the lines.
func TestFileBlocksReservedAhead(t *testing.T) {
	dir := t.TempDir()
	skipWithoutReserve(t, dir)
	path := filepath.Join(dir, "out.jsonl")
	rs := reserveRecords(0, 60_000) // about 12 MiB: the reservation is renewed
	s := Create(path, Options{})
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAll(t, s, rs, func() {
		if size, blocks := allocated(t, path); blocks < size+reserveAhead/2 {
			t.Fatalf("a file of %d bytes holds %d bytes of blocks: not reserved ahead", size, blocks)
		}
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if size, blocks := allocated(t, path); blocks >= size+reserveAhead/2 {
		t.Fatalf("after Close, a file of %d bytes holds %d bytes of blocks: the reservation was kept", size, blocks)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want(t, rs)) {
		t.Fatalf("the file holds %d bytes, not the %d of the lines", len(got), len(want(t, rs)))
	}
}

// TestReserveRefusedWritesOn: a file system that refuses to reserve blocks
// (not supported, or the disk is full) is asked once, and the sink writes
// every line as without it.
func TestReserveRefusedWritesOn(t *testing.T) {
	for _, refusal := range []error{syscall.EOPNOTSUPP, syscall.ENOSPC} {
		t.Run(refusal.Error(), func(t *testing.T) {
			defer func(f func(*os.File, int64, int64) error) { reserve = f }(reserve)
			asked := 0
			reserve = func(*os.File, int64, int64) error { asked++; return refusal }
			path := filepath.Join(t.TempDir(), "out.jsonl")
			rs := reserveRecords(0, 20_000)
			s := Create(path, Options{})
			if err := s.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			writeAll(t, s, rs, nil)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if asked != 1 {
				t.Errorf("asked to reserve %d times after a refusal, want once", asked)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want(t, rs)) {
				t.Fatalf("the file holds %d bytes, not the %d of the lines", len(got), len(want(t, rs)))
			}
		})
	}
}

// TestReleaseCutsNoForeignBytes: Close gives back the reserved blocks by a
// truncate to the file's size only when that size is the one the sink
// wrote to: bytes that another writer appended are not cut.
func TestReleaseCutsNoForeignBytes(t *testing.T) {
	dir := t.TempDir()
	skipWithoutReserve(t, dir)
	path := filepath.Join(dir, "out.jsonl")
	rs := reserveRecords(0, 5000)
	s := Create(path, Options{})
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAll(t, s, rs, nil)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("foreign\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := append(want(t, rs), "foreign\n"...); !bytes.Equal(mustRead(t, path), got) {
		t.Fatalf("the file does not end in the foreign line: %q", tail(mustRead(t, path)))
	}
}

// TestReserveResumesAtTheEnd: a sink that appends to an existing file
// reserves from that file's end, and its Close gives back what it reserved
// (and what a killed run left reserved past the same end).
func TestReserveResumesAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	skipWithoutReserve(t, dir)
	path := filepath.Join(dir, "out.jsonl")
	first, second := reserveRecords(0, 3000), reserveRecords(3000, 3000)
	s := Create(path, Options{})
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAll(t, s, first, nil)
	s.file.Close() // killed: no Close, the reservation stays
	s.closeSide()
	if size, blocks := allocated(t, path); blocks < size+reserveAhead/2 {
		t.Fatalf("a killed sink's file of %d bytes holds %d bytes of blocks: not reserved ahead", size, blocks)
	}
	s = Create(path, Options{})
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeAll(t, s, second, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if size, blocks := allocated(t, path); blocks >= size+reserveAhead/2 {
		t.Fatalf("after Close, a file of %d bytes holds %d bytes of blocks: the reservation was kept", size, blocks)
	}
	if got := mustRead(t, path); !bytes.Equal(got, want(t, append(first, second...))) {
		t.Fatalf("the file holds %d bytes, not the lines of both runs", len(got))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tail(b []byte) []byte { return b[max(0, len(b)-40):] }

// BenchmarkFileReserve writes 64 MiB of lines (about 320,000 records, in
// batches of 4096 with a Flush each) through a file sink into a new file
// and closes it, with the blocks reserved ahead and without (the file
// system refusing), on the temporary directory's file system. It reports
// the process's CPU seconds (user and system) per op beside the wall time:
// the write calls' time is the kernel's copy into the page cache and its
// bookkeeping, which the reservation cuts.
//
//	go test -run '^$' -bench FileReserve -benchtime 10x ./sinks/jsonl/
func BenchmarkFileReserve(b *testing.B) {
	rs := reserveRecords(0, 4096)
	for _, reserved := range []bool{true, false} {
		b.Run(map[bool]string{true: "reserved", false: "unreserved"}[reserved], func(b *testing.B) {
			if !reserved {
				defer func(f func(*os.File, int64, int64) error) { reserve = f }(reserve)
				reserve = func(*os.File, int64, int64) error { return syscall.EOPNOTSUPP }
			}
			path := filepath.Join(b.TempDir(), "out.jsonl")
			ctx := context.Background()
			var cpu time.Duration
			for b.Loop() {
				os.Remove(path)
				os.Remove(SideFile(path))
				start := cpuTime()
				s := Create(path, Options{})
				if err := s.Open(ctx); err != nil {
					b.Fatal(err)
				}
				for s.size < 64<<20 {
					if err := s.Write(ctx, rs); err != nil {
						b.Fatal(err)
					}
					if err := s.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - start
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
