//go:build !amd64

package signalbox

import "github.com/signalbox/signalbox/record"

// prefetchRecord is a no-op where there is no prefetch instruction wired
// up (prefetch_amd64.s).
func prefetchRecord(*record.Record) {}
