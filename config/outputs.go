package config

import "fmt"

// validateOutputs refuses two file sinks (dead_letter included) writing to
// one file, or to stdout: each truncates or interleaves the other's lines.
func (j *Job) validateOutputs(v *validator) {
	first := map[string]string{} // output → the path field that writes it first
	check := func(s *Sink, p string) {
		if s == nil || s.Type != "jsonl" {
			return
		}
		c := s.settings().(*JSONLSink)
		out, field := c.output(), p+".path"
		prev, dup := first[out]
		switch {
		case !dup:
			first[out] = field
		case out == "stdout":
			v.bad(field, "writes to stdout, as %s does (an absent path and \"-\" are stdout): one sink at most may write to stdout, "+
				"or their lines interleave", prev)
		default:
			v.bad(field, "%q is the file %s already writes to: each sink needs a file of its own, or their lines interleave", c.Path, prev)
		}
	}
	for i := range j.Sinks {
		check(&j.Sinks[i], fmt.Sprintf("sinks[%d]", i))
	}
	check(j.DeadLetter, "dead_letter")
	for i := range j.Windows {
		for k := range j.Windows[i].Sinks {
			check(&j.Windows[i].Sinks[k], fmt.Sprintf("windows[%d].sinks[%d]", i, k))
		}
	}
}
