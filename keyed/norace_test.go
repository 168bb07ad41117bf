//go:build !race

package keyed_test

// raceEnabled says the tests run under -race, which slows pebble down.
const raceEnabled = false
