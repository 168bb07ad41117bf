package postgres

import (
	"strings"
	"testing"
)

// TestConfigValidate: the PostgreSQL sink's own rules, which the job file
// maps onto its YAML paths (package config). It needs no server.
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" : valid
	}{
		{Config{DSN: "postgres://h/db"}, ""},
		{Config{DSN: "postgres://h/db", Table: "ops." + strings.Repeat("t", MaxTable)}, ""},
		{Config{DSN: "postgres://h/db", Table: strings.Repeat("t", MaxTable+1)}, "postgres: table: "},
		{Config{DSN: "postgres://h/db", Table: "ops."}, "postgres: table: "},
		{Config{DSN: "postgres://h/db", ValueType: "xml"}, `postgres: value_type: "xml" is not one of jsonb, text`},
		{Config{}, "postgres: dsn: required"},
	} {
		tc.cfg.EnsureDefaults()
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
