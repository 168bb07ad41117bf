package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHeapProfiles checks that --heapprofile writes a gzipped profile at
// the start and one at the end, numbered, and that bad settings fail at
// once naming the flag.
func TestHeapProfiles(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "heap")
	stop, err := startHeapProfiles(prefix, time.Hour) // no tick during the test
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.Glob(prefix + "-*")
	want := []string{prefix + "-0000.pb.gz", prefix + "-0001.pb.gz"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files %q, want %q", got, want)
	}
	for _, path := range got {
		checkProfile(t, path)
	}

	if _, err := startHeapProfiles(filepath.Join(t.TempDir(), "no", "dir", "heap"), time.Minute); err == nil || !strings.Contains(err.Error(), "--heapprofile") {
		t.Errorf("missing directory: %v, want an error naming --heapprofile", err)
	}
	if _, err := startHeapProfiles(prefix, 0); err == nil || !strings.Contains(err.Error(), "--heapprofile-every") {
		t.Errorf("zero interval: %v, want an error naming --heapprofile-every", err)
	}
}

// TestHeapProfilesTick checks that snapshots keep coming between start and
// stop.
func TestHeapProfilesTick(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "heap")
	stop, err := startHeapProfiles(prefix, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if got, _ := filepath.Glob(prefix + "-*"); len(got) >= 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// checkProfile fails unless path holds a gzipped, non-empty profile.
func checkProfile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Errorf("%s: %d bytes of profile, %v", path, len(raw), err)
	}
}

// TestAllocProfile checks that --allocprofile creates its file at once (a
// bad path fails before the run, naming the flag) and writes a gzipped
// profile into it at the end.
func TestAllocProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allocs.pb.gz")
	write, err := startAllocProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("not created at start: %v", err)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	checkProfile(t, path)

	if _, err := startAllocProfile(filepath.Join(t.TempDir(), "no", "dir", "allocs")); err == nil || !strings.Contains(err.Error(), "--allocprofile") {
		t.Errorf("missing directory: %v, want an error naming --allocprofile", err)
	}
}
