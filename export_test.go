package signalbox

// MemStore is the default in-memory ParkedStore, for the external tests to
// wrap (align_test.go's peakStore).
type MemStore = memStore

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return newMemStore() }

// WithStepped calls f on the engine goroutine at the end of every pass of
// its loop that handled a Fetch: a scripted source can then deliver one
// Fetch at a time, each handled to the end (released, aligned,
// checkpointed) before the next (engine_transcript_test.go).
func WithStepped(f func()) Option { return func(c *config) { c.stepped = f } }

// HeldUnpausedLimit is heldUnpausedLimit (hold.go).
const HeldUnpausedLimit = heldUnpausedLimit
