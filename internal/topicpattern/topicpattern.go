// Package topicpattern compiles the topic patterns of inputs
// (inputs[i].topic_pattern), so that the library, which picks an input's
// decoder by topic, and the Kafka source, which discovers the topics, agree
// on what a pattern matches; and it holds the one rule for a Kafka topic's
// name, which the job file's inputs and Kafka sinks and the Kafka source's
// configuration all check (CheckName).
//
// Invariants:
//
//  1. A pattern matches a whole topic name (it is anchored at both ends);
//     the empty pattern and one longer than MaxPatternLen are refused.
//  2. CheckName accepts exactly Kafka's legal names: 1 to MaxNameLen of
//     letters, digits, '.', '_' and '-', but not "." or "..".
//  3. No error repeats more than fielderr.MaxEcho characters of the name
//     or pattern it refuses.
package topicpattern

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/signalbox/signalbox/internal/fielderr"
)

// MaxPatternLen is the longest pattern Compile accepts, in bytes: a longer
// one is a mistake (a file pasted in), not a set of topics.
const MaxPatternLen = 4096

// Compile compiles p, anchored at both ends.
func Compile(p string) (*regexp.Regexp, error) {
	switch {
	case p == "":
		return nil, errors.New("empty pattern")
	case len(p) > MaxPatternLen:
		return nil, fmt.Errorf("%d bytes long: a pattern has at most %d", len(p), MaxPatternLen)
	}
	// Parsed alone first, so that an error quotes the pattern as written,
	// not its anchored form.
	var se *syntax.Error
	if _, err := syntax.Parse(p, syntax.Perl); errors.As(err, &se) {
		return nil, fmt.Errorf("not a regular expression: %s: %s", se.Code, fielderr.Quote(se.Expr))
	}
	return regexp.Compile("^(?:" + p + ")$")
}

// MaxNameLen is the longest Kafka topic name.
const MaxNameLen = 249

// nameRE is a Kafka topic name's characters.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CheckName reports whether name is a legal Kafka topic name, as the broker
// judges it; the error repeats at most fielderr.MaxEcho characters of it.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty topic name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("%s is %d characters long: a Kafka topic name has at most %d", fielderr.Quote(name), len(name), MaxNameLen)
	case !nameRE.MatchString(name) || name == "." || name == "..":
		return fmt.Errorf("%s is not a Kafka topic name (letters, digits, '.', '_', '-'; at most %d)", fielderr.Quote(name), MaxNameLen)
	}
	return nil
}
