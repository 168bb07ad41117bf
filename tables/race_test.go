//go:build race

package tables

// raceEnabled says the tests run under -race, which slows pebble down.
const raceEnabled = true
