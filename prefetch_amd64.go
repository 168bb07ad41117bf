package signalbox

import "github.com/signalbox/signalbox/record"

// prefetchRecord asks the CPU to load the cache lines of *p, a parked
// record about to be released: parked records are cold by then, and the
// release loop's copy of each into its out batch would otherwise wait for
// memory one record at a time. A hint only: it reads nothing.
//
//go:noescape
func prefetchRecord(p *record.Record)
