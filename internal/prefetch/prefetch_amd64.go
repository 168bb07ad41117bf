package prefetch

import "github.com/signalbox/signalbox/record"

// Record loads the cache lines of *r.
//
//go:noescape
func Record(r *record.Record)

// Bytes loads the first two cache lines of b's bytes.
//
//go:noescape
func Bytes(b []byte)
