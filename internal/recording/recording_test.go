package recording_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{"--cpuprofile", recording.CPUProfile, func(b []byte) bool {
			z, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return false
			}
			data, err := io.ReadAll(z)
			return err == nil && len(data) > 0
		}},
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
