package bulk

import (
	"strings"
	"testing"
)

// TestConfigValidate: the bulk sink's own rules, which the job file maps
// onto its YAML paths (package config).
func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" : valid
	}{
		{Config{URL: "http://localhost:9200", Index: "i"}, ""},
		{Config{URL: "https://search.internal", Index: "i"}, ""},
		{Config{Index: "i"}, "bulk: url: required for a bulk sink"},
		{Config{URL: "ftp://h", Index: "i"}, `bulk: url: "ftp://h" is not an http(s) URL`},
		{Config{URL: "http://", Index: "i"}, `bulk: url: "http://" is not an http(s) URL`},
		{Config{URL: "http://h"}, "bulk: index: required for a bulk sink"},
		{Config{}, "bulk: url: required for a bulk sink, e.g. http://localhost:9200\nbulk: index: required for a bulk sink"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
