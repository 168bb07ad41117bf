//go:build !race

package durable

const raceOn = false
