//go:build race

package durable

// raceOn: the race detector allocates on its own and disables sync.Pool, so
// allocation counts mean nothing under it.
const raceOn = true
