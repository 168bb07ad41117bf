package config

import (
	"net/http"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/bulk"
)

// BulkSink are the settings of a `type: bulk` sink. AuthEnv is the NAME of
// the environment variable that holds the Authorization header.
type BulkSink struct {
	URL        string `yaml:"url"`
	Index      string `yaml:"index"`
	AuthEnv    string `yaml:"auth_env"`
	MaxDocs    int    `yaml:"max_docs"`
	MaxBytes   string `yaml:"max_bytes"`
	Linger     string `yaml:"linger"`
	DocID      string `yaml:"doc_id"`
	Versioning string `yaml:"versioning"`
}

var (
	docIDValues      = []string{"key", "offset"}
	versioningValues = []string{"event_time", "offset", "none"}
)

func (s *BulkSink) validate(v *validator, p string) {
	cfg := bulk.Config{URL: s.URL, Index: s.Index, MaxDocs: s.MaxDocs, MaxBytes: int(v.size(p+".max_bytes", s.MaxBytes)),
		Linger: v.duration(p+".linger", s.Linger, notNegative)}
	cfg.EnsureDefaults() // max_bytes: 0 is left out, or refused as text (validator.size)
	v.asWritten(p+".max_docs", &cfg.MaxDocs, s.MaxDocs)
	v.fields(p, cfg.Validate())
	v.oneOf(p+".doc_id", s.DocID, docIDValues)
	v.oneOf(p+".versioning", s.Versioning, versioningValues)
	v.envName(p+".auth_env", s.AuthEnv)
}

func (s *BulkSink) info(*Job) signalbox.SinkInfo { return bulk.Config{}.Info() }

func (s *BulkSink) build(*Job) (signalbox.Sink, error) {
	cfg := bulk.Config{URL: s.URL, Index: s.Index, MaxDocs: s.MaxDocs, MaxBytes: int(sizeOrZero(s.MaxBytes))}
	cfg.Linger = bulkLinger(s.Linger)
	if s.DocID == "offset" {
		cfg.DocID = bulk.OffsetID
	}
	cfg.Versioning = map[string]bulk.Versioning{"offset": bulk.OffsetVersion, "none": bulk.NoVersion}[s.Versioning]
	if s.AuthEnv != "" {
		auth, err := fromEnv("auth_env", s.AuthEnv)
		if err != nil {
			return nil, err
		}
		cfg.Header = http.Header{"Authorization": []string{auth}}
	}
	return bulk.New(cfg), nil
}

// bulkLinger maps the job file's linger onto bulk.Config.Linger: left out,
// the sink's default; 0s, no timer of the sink's own (a request is sent when
// full or when the engine flushes, flush_linger after release).
func bulkLinger(v string) time.Duration {
	if v == "" {
		return 0
	}
	d, _ := time.ParseDuration(v) // validated
	if d == 0 {
		return -1
	}
	return d
}
