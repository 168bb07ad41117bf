package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestStart runs the hook on this process's own collections: the limit moves
// from the one in force to what the pacer proposes, within the ceiling and
// above the live heap, and stopping puts the old limit back for good
// (invariant 5).
func TestStart(t *testing.T) {
	const before = 1 << 40
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(before))
	held := make([]byte, 32<<20) // a live heap the limit must leave room for
	stop := Start(New(Config{GCPercent: 100, Ceiling: before - 1, Window: 2}))
	var limit int64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(time.Millisecond) // let the cleanup goroutine run
		if limit = debug.SetMemoryLimit(-1); limit != before {
			break
		}
	}
	runtime.KeepAlive(held)
	if limit == before {
		t.Fatal("the limit was never set after 30 s of collections")
	}
	if limit < 32<<20 || limit >= before {
		t.Errorf("limit %d: want at least the 32 MiB held and below the ceiling", limit)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after stop: limit %d, want the one before Start, %d", got, before)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("collections after stop changed the limit to %d", got)
	}
}
