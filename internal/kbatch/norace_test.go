//go:build !race

package kbatch

// raceEnabled: the race detector is on (see race_test.go).
const raceEnabled = false
