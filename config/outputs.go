package config

import (
	"fmt"
	"path/filepath"
)

// stdoutPaths are the paths of a jsonl sink that write to standard output:
// the empty path and "-" by definition, the others by the operating system
// (the sink writes os.Stdout for each, never opening the device).
var stdoutPaths = map[string]bool{"": true, "-": true, "/dev/stdout": true, "/dev/fd/1": true, "/proc/self/fd/1": true}

// output is the file a jsonl sink writes: "stdout", or its cleaned absolute
// path, so that one file spelt two ways (out.jsonl, ./out.jsonl,
// logs/../out.jsonl, or its absolute path) is one output.
func (s *Sink) output() string {
	if s.writesStdout() {
		return "stdout"
	}
	if abs, err := filepath.Abs(s.Path); err == nil {
		return abs
	}
	return filepath.Clean(s.Path)
}

// validateOutputs refuses two file sinks (dead_letter included) writing to
// one file, or to stdout: each truncates or interleaves the other's lines.
func (j *Job) validateOutputs(v *validator) {
	first := map[string]string{} // output → the path field that writes it first
	check := func(s *Sink, p string) {
		if s == nil || s.Type != "jsonl" {
			return
		}
		out, field := s.output(), p+".path"
		prev, dup := first[out]
		switch {
		case !dup:
			first[out] = field
		case out == "stdout":
			v.bad(field, "writes to stdout, as %s does (an absent path and \"-\" are stdout): one sink at most may write to stdout, "+
				"or their lines interleave", prev)
		default:
			v.bad(field, "%q is the file %s already writes to: each sink needs a file of its own, or their lines interleave", s.Path, prev)
		}
	}
	for i := range j.Sinks {
		check(&j.Sinks[i], fmt.Sprintf("sinks[%d]", i))
	}
	check(j.DeadLetter, "dead_letter")
}
