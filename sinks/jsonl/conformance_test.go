package jsonl_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	env "github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

func values(t *testing.T, b []byte) [][]byte {
	var out [][]byte
	for _, e := range decodeLines(t, b) {
		out = append(out, []byte(e.Value))
	}
	return out
}

// stored decodes every line back to its record's bytes.
func stored(t *testing.T, b []byte) []sinktest.Stored {
	var out []sinktest.Stored
	for line := range bytes.Lines(b) {
		d, err := env.Decode(line)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, sinktest.Stored{Offset: d.Offset, Key: d.Key, Value: d.Value})
	}
	return out
}

func TestConformanceFile(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Target {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		return sinktest.Target{
			Sink:       jsonl.Create(path, jsonl.Options{Sync: true}),
			TotalOrder: true,
			Read: func(t *testing.T) [][]byte {
				b, err := os.ReadFile(path)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				return values(t, b)
			},
			ReadRecords: func(t *testing.T) []sinktest.Stored {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				return stored(t, b)
			},
		}
	})
}

// breakable is a writer whose destination can be made to fail.
type breakable struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	broken bool
}

func (b *breakable) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken {
		return 0, errors.New("broken pipe")
	}
	return b.buf.Write(p)
}

func TestConformanceWriter(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) sinktest.Target {
		w := &breakable{}
		return sinktest.Target{
			Sink:       jsonl.New(w, jsonl.Options{BufferSize: 512}),
			TotalOrder: true,
			Read: func(t *testing.T) [][]byte {
				w.mu.Lock()
				defer w.mu.Unlock()
				return values(t, w.buf.Bytes())
			},
			ReadRecords: func(t *testing.T) []sinktest.Stored {
				w.mu.Lock()
				defer w.mu.Unlock()
				return stored(t, w.buf.Bytes())
			},
			Fail: func(t *testing.T, retryable bool) (func(), bool) {
				if retryable {
					return nil, false // jsonl has no transient errors
				}
				w.mu.Lock()
				w.broken = true
				w.mu.Unlock()
				return func() { w.mu.Lock(); w.broken = false; w.mu.Unlock() }, true
			},
		}
	})
}
