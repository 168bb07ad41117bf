package signalbox

// MemStore is the default in-memory ParkedStore, for the external tests to
// wrap (align_test.go's peakStore).
type MemStore = memStore

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return newMemStore() }
