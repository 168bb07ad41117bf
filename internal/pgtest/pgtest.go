// Package pgtest finds the PostgreSQL server the tests run against.
//
// Its DSN is $SIGNALBOX_PG_DSN (.ci/postgres.sh installs and starts a server
// and prints it). Without one a test skips with a message saying so, except
// under CI=true, where it fails: CI must run them.
package pgtest

import (
	"os"
	"testing"
)

// DSN returns the test server's DSN, or skips (fails under CI) without one.
func DSN(t testing.TB) string {
	t.Helper()
	d := os.Getenv("SIGNALBOX_PG_DSN")
	if d == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("SIGNALBOX_PG_DSN is not set under CI: run .ci/postgres.sh")
		}
		t.Skip("SIGNALBOX_PG_DSN not set (run .ci/postgres.sh)")
	}
	return d
}
