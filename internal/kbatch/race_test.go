//go:build race

package kbatch

// raceEnabled: the race detector is on; it drops a share of what goes into
// a sync.Pool, so allocation counts mean nothing.
const raceEnabled = true
