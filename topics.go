package signalbox

// The topics of the inputs and what the source reads: InputTopics, which
// derives a source's topics from the inputs, and New's check that every
// input names a topic the source delivers (TopicLister).

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/topicpattern"
)

// InputTopics returns the topics (Input.Topic) and the topic patterns
// (Input.TopicPattern) of inputs, in order, each once: what a source must
// read for them, so that the topics are declared once, in the inputs:
//
//	topics, patterns := signalbox.InputTopics(inputs...)
//	src, err := kafka.New(kafka.Config{Brokers: brokers, Topics: topics, TopicPatterns: patterns})
func InputTopics(inputs ...Input) (topics, patterns []string) {
	for _, in := range inputs {
		switch {
		case in.TopicPattern != "" && !slices.Contains(patterns, in.TopicPattern):
			patterns = append(patterns, in.TopicPattern)
		case in.TopicPattern == "" && in.Topic != "" && !slices.Contains(topics, in.Topic):
			topics = append(topics, in.Topic)
		}
	}
	return topics, patterns
}

// checkRead refuses an input naming a topic the source never delivers
// (TopicLister), each as a field error of its inputs[i] entry.
func checkRead(src Source, inputs []Input) error {
	tl, ok := src.(TopicLister)
	if !ok {
		return nil
	}
	topics, patterns := tl.Topics()
	var res []*regexp.Regexp
	for _, p := range patterns {
		if re, err := topicpattern.Compile(p); err == nil { // the source validated it
			res = append(res, re)
		}
	}
	reads := func(topic string) bool {
		return slices.Contains(topics, topic) ||
			!strings.HasPrefix(topic, "__") && slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(topic) })
	}
	var errs []error
	for i, in := range inputs {
		switch {
		case in.TopicPattern != "":
			re, err := topicpattern.Compile(in.TopicPattern)
			if err != nil || len(res) > 0 || slices.ContainsFunc(topics, re.MatchString) {
				continue // err: Validate reports it
			}
			errs = append(errs, fielderr.New(fmt.Sprintf("inputs[%d].topic_pattern", i),
				"%s matches none of the topics the source reads (%s), and the source reads no pattern: no record would ever be decoded by it",
				fielderr.Quote(in.TopicPattern), sourceTopics(topics, patterns)))
		case in.Topic != "" && !reads(in.Topic):
			errs = append(errs, fielderr.New(fmt.Sprintf("inputs[%d].topic", i),
				"%s is not a topic the source reads (%s): no record would ever be decoded by it; add it to the source's topics (InputTopics derives them from the inputs) or correct the name",
				fielderr.Quote(in.Topic), sourceTopics(topics, patterns)))
		}
	}
	return errors.Join(errs...)
}

// sourceTopics names what a source reads, for a message: at most 10
// topics and 10 patterns.
func sourceTopics(topics, patterns []string) string {
	var parts []string
	for _, l := range []struct {
		what string
		xs   []string
	}{{"topics", topics}, {"patterns", patterns}} {
		if len(l.xs) == 0 {
			continue
		}
		var q []string
		for _, x := range l.xs[:min(len(l.xs), 10)] {
			q = append(q, fielderr.Quote(x))
		}
		part := l.what + " " + strings.Join(q, ", ")
		if n := len(l.xs) - 10; n > 0 {
			part += fmt.Sprintf(" and %d more", n)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
