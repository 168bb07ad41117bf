// Package ci holds the one rule for tests that need a tool or server from
// outside Go (PostgreSQL, Prometheus, kcat): where it is missing they skip,
// except under CI, where they fail, because CI must run them.
//
// Under CI means the environment variable CI holds a true value
// (strconv.ParseBool: "true", "1", ...), as CI services set it and
// .ci/run exports it.
package ci

import (
	"os"
	"strconv"
	"testing"
)

// Active reports whether the tests run under CI.
func Active() bool {
	on, _ := strconv.ParseBool(os.Getenv("CI"))
	return on
}

// Missing skips t with msg, or fails it with msg under CI.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if Active() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
