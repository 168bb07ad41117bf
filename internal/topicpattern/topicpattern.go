// Package topicpattern compiles the topic patterns of inputs
// (inputs[i].topic_pattern), so that the library, which picks an input's
// decoder by topic, and the Kafka source, which discovers the topics, agree
// on what a pattern matches.
//
// Invariant: a pattern matches a whole topic name (it is anchored at both
// ends), and the empty pattern is refused.
package topicpattern

import (
	"errors"
	"regexp"
)

// Compile compiles p, anchored at both ends.
func Compile(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, errors.New("empty pattern")
	}
	return regexp.Compile("^(?:" + p + ")$")
}
