package signalbox_test

import (
	"os"
	"testing"

	"github.com/signalbox/signalbox/internal/waitpar"
)

// TestMain: the tests that call t.Parallel here spend their time waiting
// (stalled or throttled sinks, registry outages, timed stops, retry
// backoff), not computing, so they all run at once, after the others
// (internal/waitpar). A test that measures the heap or sets the
// environment must not call t.Parallel.
func TestMain(m *testing.M) { os.Exit(waitpar.Main(m, 16)) }
