//go:build !amd64

package prefetch

import "github.com/signalbox/signalbox/record"

// Record loads the cache lines of *r (a no-op on this architecture).
func Record(*record.Record) {}

// Bytes loads the first two cache lines of b's bytes (a no-op on this
// architecture).
func Bytes([]byte) {}
