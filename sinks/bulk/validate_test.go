package bulk

import (
	"strings"
	"testing"
)

// TestConfigValidate: the bulk sink's own rules, which the job file maps
// onto its YAML paths (package config).
func TestConfigValidate(t *testing.T) {
	for _, ok := range []Config{{URL: "http://localhost:9200", Index: "i"}, {URL: "https://search.internal", Index: "i"}} {
		ok.EnsureDefaults()
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
	for want, bad := range map[string]Config{
		"bulk: url: required for a bulk sink":                                                          {Index: "i"},
		`bulk: url: "ftp://h" is not an http(s) URL`:                                                   {URL: "ftp://h", Index: "i"},
		`bulk: url: "http://" is not an http(s) URL`:                                                   {URL: "http://", Index: "i"},
		"bulk: index: required for a bulk sink":                                                        {URL: "http://h"},
		"bulk: url: required for a bulk sink, e.g. http://localhost:9200\nbulk: index: required for a": {},
		"bulk: max_docs: 0 is out of range: must be from 1 to 100000":                                  {URL: "http://h", Index: "i", MaxBytes: 1},
		"bulk: max_bytes: 0 bytes is out of range: must be from 1 B to 100 MiB":                        {URL: "http://h", Index: "i", MaxDocs: 1},
	} {
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v, want %q", bad, err, want)
		}
	}
}
