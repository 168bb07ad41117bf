package kafka

import (
	"slices"
	"strings"
	"testing"

	"github.com/signalbox/signalbox/internal/fielderr"
)

// TestValidateChecksTopicNames: Config.Topics are held to Kafka's rule for
// a topic name (the one the job file's inputs and kafka sinks use), with a
// short error however long the name; Topics reports what the source reads.
func TestValidateChecksTopicNames(t *testing.T) {
	cfg := Config{Brokers: []string{"localhost:9092"}, Topics: []string{"orders", "bad topic/with:chars", strings.Repeat("t", 900_000), ""},
		TopicPatterns: []string{"ev-.*"}}
	cfg.EnsureDefaults()
	err := cfg.Validate()
	var fields []string
	for _, fe := range fielderr.All(err) {
		fields = append(fields, fe.Field)
	}
	if !slices.Equal(fields, []string{"topics[1]", "topics[2]", "topics[3]"}) {
		t.Errorf("Validate names %q, want topics[1], topics[2], topics[3]: %.300v", fields, err)
	}
	if err != nil && len(err.Error()) > 1000 {
		t.Errorf("%d bytes of error", len(err.Error()))
	}
	s, err := New(Config{Brokers: []string{"localhost:9092"}, Topics: []string{"orders"}, TopicPatterns: []string{"ev-.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if topics, patterns := s.Topics(); !slices.Equal(topics, []string{"orders"}) || !slices.Equal(patterns, []string{"ev-.*"}) {
		t.Errorf("Topics() = %q, %q", topics, patterns)
	}
	if name, m := s.Group(); name != "" || m != nil {
		t.Errorf("Group() without a group = %q, %v", name, m)
	}
}
