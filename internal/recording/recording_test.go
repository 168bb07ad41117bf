package recording_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/internal/recording"
)

// TestRecordings checks that a CPU profile and an execution trace write
// their file (a gzipped profile; a trace starting with its "go 1." header),
// and that a bad path, or a recording of the same kind already running,
// fails at once naming the flag.
func TestRecordings(t *testing.T) {
	for _, tc := range []struct {
		flag  string
		start func(flag, path string) (func() error, error)
		check func(b []byte) bool
	}{
		{"--cpuprofile", recording.CPUProfile, isProfile},
		{"--trace", recording.Trace, func(b []byte) bool { return bytes.HasPrefix(b, []byte("go 1.")) }},
	} {
		path := filepath.Join(t.TempDir(), "rec")
		stop, err := tc.start(tc.flag, path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tc.start(tc.flag, filepath.Join(t.TempDir(), "second")); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("a second %s while one runs: %v, want an error naming the flag", tc.flag, err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || !tc.check(b) {
			t.Errorf("%s: %s wrote no recording (%v): %.16q", tc.flag, path, err, b)
		}
		if _, err := tc.start(tc.flag, filepath.Join(t.TempDir(), "no", "dir", "rec")); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("missing directory: %v, want an error naming %s", err, tc.flag)
		}
	}
}

// isProfile reports whether b is a gzipped, non-empty profile.
func isProfile(b []byte) bool {
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return false
	}
	data, err := io.ReadAll(z)
	return err == nil && len(data) > 0
}

// checkProfile fails unless path holds a gzipped, non-empty profile.
func checkProfile(t *testing.T, path string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || !isProfile(b) {
		t.Errorf("%s: not a profile (%v): %.16q", path, err, b)
	}
}

// TestAllocProfile checks that an allocation profile creates its file at
// once (a bad path fails before the run, naming the flag) and writes a
// gzipped profile into it when stopped.
func TestAllocProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allocs.pb.gz")
	stop, err := recording.AllocProfile("--allocprofile", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("not created at start: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkProfile(t, path)

	if _, err := recording.AllocProfile("--allocprofile", filepath.Join(t.TempDir(), "no", "dir", "allocs")); err == nil || !strings.Contains(err.Error(), "--allocprofile") {
		t.Errorf("missing directory: %v, want an error naming --allocprofile", err)
	}
}

// TestHeapProfiles checks that heap snapshots are written at the start
// and at the end, numbered, and that bad settings fail at once naming the
// flag.
func TestHeapProfiles(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "heap")
	stop, err := recording.HeapProfiles("--heapprofile", prefix, time.Hour) // no tick during the test
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

	if _, err := recording.HeapProfiles("--heapprofile", filepath.Join(t.TempDir(), "no", "dir", "heap"), time.Minute); err == nil || !strings.Contains(err.Error(), "--heapprofile") {
		t.Errorf("missing directory: %v, want an error naming --heapprofile", err)
	}
	if _, err := recording.HeapProfiles("--heapprofile", prefix, 0); err == nil || !strings.Contains(err.Error(), "--heapprofile-every") {
		t.Errorf("zero interval: %v, want an error naming --heapprofile-every", err)
	}
}

// TestHeapProfilesTick checks that snapshots keep coming between start and
// stop.
func TestHeapProfilesTick(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "heap")
	stop, err := recording.HeapProfiles("--heapprofile", prefix, time.Millisecond)
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
