// Package pgtest finds the PostgreSQL server the tests run against.
//
// Its DSN is $SIGNALBOX_PG_DSN (.ci/postgres.sh installs and starts a server
// and prints it). Without one a test skips with a message saying so, except
// under CI, where it fails (package internal/ci).
package pgtest

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/internal/ci"
)

// DSN returns the test server's DSN, or skips (fails under CI) without one.
func DSN(t testing.TB) string {
	t.Helper()
	d := os.Getenv("SIGNALBOX_PG_DSN")
	if d == "" {
		ci.Missing(t, "SIGNALBOX_PG_DSN not set (run .ci/postgres.sh)")
	}
	return d
}

// WithParam returns dsn with the connection parameter key set to value,
// in either DSN form: a URL (postgres://…?key=value) or key=value words.
func WithParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " " + key + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(value) + "'"
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("SIGNALBOX_PG_DSN: %v", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
