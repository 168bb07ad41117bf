package config

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/bulk"
	"github.com/signalbox/signalbox/sinks/jsonl"
)

// sinkKind validates and builds the sinks of one type.
type sinkKind struct {
	fields   []string // the YAML keys of Sink this type uses, besides type
	validate func(s *Sink, v *validator, path string)
	build    func(s *Sink) (signalbox.Sink, error)
}

// sinkKinds maps every type in sinkTypes to its builder; nil means the
// type is recognised but this build cannot make it yet.
var sinkKinds = map[string]*sinkKind{
	"jsonl":    {fields: []string{"path", "sync", "buffer_size"}, validate: validateJSONL, build: buildJSONL},
	"bulk":     {fields: []string{"url", "index", "auth_env", "max_docs", "max_bytes", "linger", "doc_id", "versioning"}, validate: validateBulk, build: buildBulk},
	"kafka":    nil,
	"postgres": nil,
}

// checkFields reports every field of s that is set but not used by kind.
func (s *Sink) checkFields(kind *sinkKind, v *validator, p string) {
	rv, rt := reflect.ValueOf(*s), reflect.TypeOf(*s)
	for i := range rt.NumField() {
		tag := rt.Field(i).Tag.Get("yaml")
		if tag == "type" || rv.Field(i).IsZero() || slices.Contains(kind.fields, tag) {
			continue
		}
		v.bad(p+"."+tag, "not a field of a %s sink (its fields: %s)", s.Type, strings.Join(kind.fields, ", "))
	}
}

func validateJSONL(s *Sink, v *validator, p string) {
	v.size(p+".buffer_size", s.BufferSize)
	if s.Sync && s.writesStdout() {
		v.bad(p+".sync", "only for a file path, not stdout")
	}
}

func buildJSONL(s *Sink) (signalbox.Sink, error) {
	opts := jsonl.Options{Sync: s.Sync, BufferSize: int(sizeOrZero(s.BufferSize))}
	if s.writesStdout() {
		return jsonl.New(os.Stdout, opts), nil
	}
	return jsonl.Create(s.Path, opts), nil
}

var (
	docIDValues      = []string{"key", "offset"}
	versioningValues = []string{"event_time", "offset", "none"}
)

func validateBulk(s *Sink, v *validator, p string) {
	if s.URL == "" {
		v.bad(p+".url", "required for a bulk sink, e.g. http://localhost:9200")
	} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.bad(p+".url", "%q is not an http(s) URL", s.URL)
	}
	if s.Index == "" {
		v.bad(p+".index", "required for a bulk sink")
	}
	if s.MaxDocs < 0 {
		v.bad(p+".max_docs", "%d is negative", s.MaxDocs)
	}
	v.size(p+".max_bytes", s.MaxBytes)
	v.duration(p+".linger", s.Linger, false)
	v.oneOf(p+".doc_id", s.DocID, docIDValues)
	v.oneOf(p+".versioning", s.Versioning, versioningValues)
	v.envName(p+".auth_env", s.AuthEnv)
}

func buildBulk(s *Sink) (signalbox.Sink, error) {
	cfg := bulk.Config{URL: s.URL, Index: s.Index, MaxDocs: s.MaxDocs, MaxBytes: int(sizeOrZero(s.MaxBytes))}
	if s.Linger != "" {
		cfg.Linger, _ = time.ParseDuration(s.Linger) // validated
	}
	if s.DocID == "offset" {
		cfg.DocID = bulk.OffsetID
	}
	cfg.Versioning = map[string]bulk.Versioning{"offset": bulk.OffsetVersion, "none": bulk.NoVersion}[s.Versioning]
	if s.AuthEnv != "" {
		auth := os.Getenv(s.AuthEnv)
		if auth == "" {
			return nil, fmt.Errorf("auth_env: environment variable %s is unset or empty", s.AuthEnv)
		}
		cfg.Header = http.Header{"Authorization": []string{auth}}
	}
	return bulk.New(cfg), nil
}

// sizeOrZero parses a validated size; "" is 0, the default.
func sizeOrZero(s string) int64 {
	n, _ := ParseSize(s)
	return n
}

// writesStdout reports whether the sink writes to standard output.
func (s *Sink) writesStdout() bool { return s.Type == "jsonl" && (s.Path == "" || s.Path == "-") }
