package signalbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/sources/kafka"
)

// These tests hold a library program's inputs to what its Kafka source
// reads (signalbox.TopicLister): an Input naming a topic the source never
// delivers fails New, naming it, where it used to decode nothing while the
// topic meant took the Kafka timestamp.

// fromField is in with its event time from the JSON field ts.
func fromField(in signalbox.Input) signalbox.Input {
	in.Time, in.TimeField = signalbox.TimeFromField, "ts"
	return in
}

// TestInputNotReadFailsNew: an Input whose topic or pattern the source
// never delivers fails New, at inputs[i], naming the topic; one it
// delivers, or may deliver once discovery finds it, is accepted.
func TestInputNotReadFailsNew(t *testing.T) {
	for _, tc := range []struct {
		name             string
		topics, patterns []string
		inputs           []signalbox.Input
		bad              []string // the fields New names; none: accepted
	}{
		{name: "a typo", topics: []string{"orders"},
			inputs: []signalbox.Input{{Topic: "order"}}, bad: []string{"inputs[0].topic"}},
		{name: "the topic read", topics: []string{"orders", "refunds"},
			inputs: []signalbox.Input{{Topic: "refunds"}, {Topic: "orders"}}},
		{name: "one of two", topics: []string{"orders"},
			inputs: []signalbox.Input{{Topic: "orders"}, {Topic: "refunds"}}, bad: []string{"inputs[1].topic"}},
		{name: "a topic the source's pattern matches, found later", patterns: []string{"ev-.*"},
			inputs: []signalbox.Input{{Topic: "ev-later"}}},
		{name: "a pattern matches part of a name only", patterns: []string{"ev-.*"},
			inputs: []signalbox.Input{{Topic: "xev-1"}}, bad: []string{"inputs[0].topic"}},
		{name: "an internal topic matches no pattern", patterns: []string{".*"},
			inputs: []signalbox.Input{{Topic: "__consumer_offsets"}}, bad: []string{"inputs[0].topic"}},
		{name: "an input pattern matching a topic read", topics: []string{"orders-eu"},
			inputs: []signalbox.Input{{TopicPattern: "orders-.*"}}},
		{name: "an input pattern matching nothing read", topics: []string{"orders"},
			inputs: []signalbox.Input{{TopicPattern: "payments-.*"}}, bad: []string{"inputs[0].topic_pattern"}},
		{name: "an input pattern beside the source's patterns", topics: []string{"orders"}, patterns: []string{"ev-.*"},
			inputs: []signalbox.Input{{TopicPattern: "ev-eu-.*"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := kafka.New(kafka.Config{Brokers: []string{"127.0.0.1:1"}, Topics: tc.topics, TopicPatterns: tc.patterns})
			if err != nil {
				t.Fatal(err)
			}
			_, err = signalbox.New(src, signalbox.WithInputs(tc.inputs...), signalbox.WithSink(&collect{}))
			var got []string
			for _, fe := range fielderr.All(err) {
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tc.bad) {
				t.Fatalf("New: %v; want errors about %q", err, tc.bad)
			}
			for _, field := range tc.bad {
				var i int
				fmt.Sscanf(field, "inputs[%d]", &i)
				in := tc.inputs[i]
				if name := in.Topic + in.TopicPattern; !strings.Contains(err.Error(), field+": "+fmt.Sprintf("%q", name)) {
					t.Errorf("the error does not name %s %q: %v", field, name, err)
				}
			}
		})
	}
}

// produceTS writes n records to partition 0 of topic, whose field ts
// holds base+i: an event time far from their Kafka timestamps.
func produceTS(t *testing.T, c *embedded.Cluster, topic string, base int64, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, embedded.Record(topic, 0, "k", fmt.Sprintf(`{"ts":%d}`, base+int64(i))))
	}
	if err := c.Produce(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
}

// checkFieldTimes fails unless every record's event time is its field's,
// from base to base+n-1, never the Kafka timestamp.
func checkFieldTimes(t *testing.T, out *collect, base int64, n int) {
	t.Helper()
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.records) != n {
		t.Errorf("%d records out, want %d", len(out.records), n)
	}
	for _, r := range out.records {
		if r.EventTime < base || r.EventTime >= base+int64(n) {
			t.Errorf("%s/%d@%d: event time %d, not its field's: the Kafka timestamp?", r.Topic, r.Partition, r.Offset, r.EventTime)
		}
	}
}

// TestInputsDeclaredOnce: a program declares its inputs once, and its
// Kafka source reads the topics InputTopics derives from them; the records
// come out with the event time of their field.
func TestInputsDeclaredOnce(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("orders", 1), embedded.WithTopic("refunds", 1))
	base := time.Now().Add(-time.Hour).UnixMilli()
	produceTS(t, c, "orders", base, 3)
	produceTS(t, c, "refunds", base+3, 2)
	inputs := []signalbox.Input{fromField(signalbox.Input{Topic: "orders"}), fromField(signalbox.Input{TopicPattern: "ref.*"}),
		fromField(signalbox.Input{Topic: "orders"})}
	topics, patterns := signalbox.InputTopics(inputs...)
	if !slices.Equal(topics, []string{"orders"}) || !slices.Equal(patterns, []string{"ref.*"}) {
		t.Fatalf("InputTopics = %q, %q; want each once, in order", topics, patterns)
	}
	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: topics, TopicPatterns: patterns})
	if err != nil {
		t.Fatal(err)
	}
	out := &collect{}
	p, err := signalbox.New(src, signalbox.WithInputs(inputs[:2]...), signalbox.WithSink(out),
		signalbox.WithUntil(signalbox.UntilEndOffsets))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	checkFieldTimes(t, out, base, 5)
}

// TestInputFoundByDiscovery: an Input naming a topic that does not exist
// yet but matches the source's pattern is accepted; once the topic is
// created and discovery finds it, that Input decodes its records.
func TestInputFoundByDiscovery(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("orders", 1))
	base := time.Now().Add(-time.Hour).UnixMilli()
	produceTS(t, c, "orders", base, 3)
	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"orders"}, TopicPatterns: []string{"ev-.*"},
		DiscoveryInterval: kafka.MinDiscoveryInterval})
	if err != nil {
		t.Fatal(err)
	}
	out := &collect{}
	p, err := signalbox.New(src, signalbox.WithInputs(fromField(signalbox.Input{Topic: "orders"}),
		fromField(signalbox.Input{Topic: "ev-late"})), signalbox.WithSink(out))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitOut := func(n int) {
		t.Helper()
		for {
			out.mu.Lock()
			got := len(out.records)
			out.mu.Unlock()
			if got >= n {
				return
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned %v with %d of %d records out", err, got, n)
			case <-ctx.Done():
				t.Fatalf("hang guard: %d of %d records out", got, n)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitOut(3)
	if err := c.CreateTopic(ctx, "ev-late", 1); err != nil { // discovery finds it
		t.Fatal(err)
	}
	produceTS(t, c, "ev-late", base+3, 2)
	waitOut(5)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkFieldTimes(t, out, base, 5)
}
