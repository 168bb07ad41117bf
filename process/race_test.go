//go:build race

package process_test

// raceEnabled: the race detector drops a share of what goes into a
// sync.Pool (the activations), so allocation counts mean nothing.
const raceEnabled = true
