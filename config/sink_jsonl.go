package config

import (
	"os"
	"path/filepath"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/jsonl"
)

// JSONLSink are the settings of a `type: jsonl` sink.
type JSONLSink struct {
	Path       string `yaml:"path"`
	Sync       bool   `yaml:"sync"`
	BufferSize string `yaml:"buffer_size"`
}

func (s *JSONLSink) validate(v *validator, p string) {
	if n := v.size(p+".buffer_size", s.BufferSize); n > 0 {
		v.fields(p, jsonl.Options{BufferSize: int(n)}.Validate())
	}
	if s.Sync && s.writesStdout() {
		v.bad(p+".sync", "only for a file path, not stdout")
	}
}

func (s *JSONLSink) info(*Job) signalbox.SinkInfo { return jsonl.Options{}.Info() }

func (s *JSONLSink) build(*Job) (signalbox.Sink, error) {
	opts := jsonl.Options{Sync: s.Sync, BufferSize: int(sizeOrZero(s.BufferSize))}
	if s.writesStdout() {
		return jsonl.New(os.Stdout, opts), nil
	}
	return jsonl.Create(s.Path, opts), nil
}

// stdoutPaths are the paths of a jsonl sink that write to standard output:
// the empty path and "-" by definition, the others by the operating system
// (the sink writes os.Stdout for each, never opening the device).
var stdoutPaths = map[string]bool{"": true, "-": true, "/dev/stdout": true, "/dev/fd/1": true, "/proc/self/fd/1": true}

func (s *JSONLSink) writesStdout() bool { return stdoutPaths[s.Path] }

// output is the file the sink writes: "stdout", or its cleaned absolute
// path, so that one file spelt two ways (out.jsonl, ./out.jsonl,
// logs/../out.jsonl, or its absolute path) is one output.
func (s *JSONLSink) output() string {
	if s.writesStdout() {
		return "stdout"
	}
	if abs, err := filepath.Abs(s.Path); err == nil {
		return abs
	}
	return filepath.Clean(s.Path)
}
