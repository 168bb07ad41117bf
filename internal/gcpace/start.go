package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The runtime's measures, read after each collection.
var samples = []string{
	"/gc/heap/live:bytes",                 // marked by the last collection
	"/memory/classes/total:bytes",         // everything the runtime mapped
	"/memory/classes/heap/released:bytes", // returned to the OS
	"/memory/classes/heap/free:bytes",     // free, not returned: what a lower limit gives back
	"/memory/classes/heap/objects:bytes",  // the heap's objects
}

// tuner is Start's state, shared by the hook and the stop function.
type tuner struct {
	mu      sync.Mutex
	p       *Pacer
	prev    int64 // the limit before Start
	stopped bool
	s       []metrics.Sample
}

// sentinel is allocated and dropped once per collection seen: its cleanup
// runs after the collection that found it unreachable.
type sentinel struct{ _ *sentinel } // pointerful: never a tiny allocation, whose cleanup could wait for its neighbours

// Start observes each collection from now on and sets the limit p proposes
// (invariant 5). The returned function stops it and restores the limit
// that was in force; call it once.
func Start(p *Pacer) (stop func()) {
	t := &tuner{p: p, prev: debug.SetMemoryLimit(-1)}
	for _, name := range samples {
		t.s = append(t.s, metrics.Sample{Name: name})
	}
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped = true
		debug.SetMemoryLimit(t.prev)
	}
}

func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) { t.collected() }, t)
}

// collected runs on the runtime's cleanup goroutine after a collection.
func (t *tuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	metrics.Read(t.s)
	live, total, released, free, objects := t.s[0].Value.Uint64(), t.s[1].Value.Uint64(), t.s[2].Value.Uint64(), t.s[3].Value.Uint64(), t.s[4].Value.Uint64()
	var overhead uint64
	if used := released + free + objects; total > used {
		overhead = total - used
	}
	if limit, ok := t.p.Observe(live, overhead); ok {
		debug.SetMemoryLimit(limit)
	}
	t.arm()
}
