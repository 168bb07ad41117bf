package pgtest

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestWithParam: the parameter reaches the server's runtime parameters
// whatever the DSN's form, and the DSN's other settings stay.
func TestWithParam(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:p@h:5433/db",
		"postgres://u:p@h:5433/db?sslmode=disable",
		"postgresql://u:p@h:5433/db?sslmode=disable&application_name=x",
		"host=h port=5433 user=u password=p dbname=db",
		"host=h port=5433 user=u password='p q' dbname=db sslmode=disable",
	} {
		cfg, err := pgconn.ParseConfig(WithParam(t, dsn, "lock_timeout", "100"))
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if got := cfg.RuntimeParams["lock_timeout"]; got != "100" {
			t.Errorf("%s: lock_timeout %q, want 100", dsn, got)
		}
		if cfg.Host != "h" || cfg.Port != 5433 || cfg.User != "u" || cfg.Database != "db" {
			t.Errorf("%s: host %s port %d user %s database %s", dsn, cfg.Host, cfg.Port, cfg.User, cfg.Database)
		}
	}
}
