package waitpar

import (
	"flag"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// wanted is the -parallel this package's TestMain asks Main for.
const wanted = 6

func TestMain(m *testing.M) { os.Exit(Main(m, wanted)) }

// running counts the tests of TestWaitersOverlap asleep at once; most is
// its peak.
var running, most atomic.Int32

// TestWaitersOverlap: wanted parallel tests that each sleep run all at
// once, not GOMAXPROCS at a time (unless -parallel was given: then it
// applies, and this test has nothing to check).
func TestWaitersOverlap(t *testing.T) {
	if p := flag.Lookup("test.parallel").Value.String(); p != strconv.Itoa(wanted) {
		t.Skipf("-parallel %s given on the command line", p)
	}
	t.Run("sleepers", func(t *testing.T) {
		for range wanted {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(300 * time.Millisecond)
				running.Add(-1)
			})
		}
	})
	if got := most.Load(); got != wanted {
		t.Fatalf("at most %d sleeping tests ran at once, want %d", got, wanted)
	}
}
