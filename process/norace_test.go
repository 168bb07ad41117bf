//go:build !race

package process_test

const raceEnabled = false // see race_test.go
