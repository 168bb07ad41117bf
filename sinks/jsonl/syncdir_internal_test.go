package jsonl

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/signalbox/signalbox/record"
)

// TestSyncFsyncsTheDirectory: with Sync, Open and every Flush fsync the
// file's directory after renaming the side file into place (the rename and
// the file's creation are entries of the directory, which a machine crash
// loses without it); without Sync, nothing is fsynced.
func TestSyncFsyncsTheDirectory(t *testing.T) {
	defer func(f func(string) error) { syncDir = f }(syncDir)
	var dirs []string
	real := syncDir
	syncDir = func(dir string) error {
		dirs = append(dirs, dir)
		return real(dir)
	}
	ctx := context.Background()
	for _, sync := range []bool{false, true} {
		dirs = nil
		dir := t.TempDir()
		s := Create(filepath.Join(dir, "out.jsonl"), Options{Sync: sync})
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			rec := record.Record{Topic: "t", Offset: int64(i), Value: []byte(`{}`)}
			if err := s.Write(ctx, []record.Record{rec}); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		var want []string
		if sync {
			want = []string{dir, dir, dir} // Open and the two Flushes (Close has nothing new)
		}
		if !slices.Equal(dirs, want) {
			t.Fatalf("sync=%v: directories fsynced %q, want %q", sync, dirs, want)
		}
	}
}

// TestSyncDirFailureFailsTheFlush: when the directory's fsync fails, the
// Flush that needed it fails (its records are not acknowledged), and the
// sink stays failed (invariant 2).
func TestSyncDirFailureFailsTheFlush(t *testing.T) {
	defer func(f func(string) error) { syncDir = f }(syncDir)
	ctx := context.Background()
	s := Create(filepath.Join(t.TempDir(), "out.jsonl"), Options{Sync: true})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	broken := errors.New("fsync: input/output error")
	syncDir = func(string) error { return broken }
	if err := s.Write(ctx, []record.Record{{Topic: "t", Value: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); !errors.Is(err, broken) {
		t.Fatalf("Flush: %v, want the directory's fsync error", err)
	}
	if err := s.Flush(ctx); !errors.Is(err, broken) {
		t.Fatalf("Flush after the failure: %v, want the same error (the sink stays failed)", err)
	}
}
