package signalbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/kafka"
)

// exampleBroker starts an in-process broker holding topic orders: two
// partitions whose records' event times (the "ts" field, also their Kafka
// timestamp) interleave, from minute 1 to 5 after base.
func exampleBroker() (*embedded.Cluster, time.Time, error) {
	c, err := embedded.Start(embedded.WithTopic("orders", 2))
	if err != nil {
		return nil, time.Time{}, err
	}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, o := range []struct {
		partition int32
		key       string
		minute    int
	}{{0, "apple", 1}, {0, "pear", 4}, {1, "apple", 2}, {1, "plum", 3}, {1, "pear", 5}} {
		ts := base.Add(time.Duration(o.minute) * time.Minute)
		r := embedded.Record("orders", o.partition, o.key, fmt.Sprintf(`{"n":%d,"ts":%q}`, i, ts.Format(time.RFC3339)))
		r.Timestamp = ts
		if err := c.Produce(context.Background(), r); err != nil {
			c.Close()
			return nil, time.Time{}, err
		}
	}
	return c, base, nil
}

// Reading Kafka: the records of both partitions come out in event-time
// order. UntilEndOffsets makes Run return once the history present at
// start-up is written; without it Run keeps going live until ctx is
// cancelled.
func Example_kafka() {
	c, _, err := exampleBroker()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// The inputs are declared once: the source reads the topics they name.
	inputs := []signalbox.Input{{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}}
	topics, patterns := signalbox.InputTopics(inputs...)
	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: topics, TopicPatterns: patterns})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := signalbox.New(src,
		signalbox.WithInputs(inputs...),
		signalbox.WithSink(jsonl.New(os.Stdout, jsonl.Options{})),
		signalbox.WithUntil(signalbox.UntilEndOffsets),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"topic":"orders","partition":0,"offset":0,"key":"apple","event_time":"2026-03-01T00:01:00.000Z","event_time_ms":1772323260000,"value":{"n":0,"ts":"2026-03-01T00:01:00Z"},"late":false}
	// {"topic":"orders","partition":1,"offset":0,"key":"apple","event_time":"2026-03-01T00:02:00.000Z","event_time_ms":1772323320000,"value":{"n":2,"ts":"2026-03-01T00:02:00Z"},"late":false}
	// {"topic":"orders","partition":1,"offset":1,"key":"plum","event_time":"2026-03-01T00:03:00.000Z","event_time_ms":1772323380000,"value":{"n":3,"ts":"2026-03-01T00:03:00Z"},"late":false}
	// {"topic":"orders","partition":0,"offset":1,"key":"pear","event_time":"2026-03-01T00:04:00.000Z","event_time_ms":1772323440000,"value":{"n":1,"ts":"2026-03-01T00:04:00Z"},"late":false}
	// {"topic":"orders","partition":1,"offset":2,"key":"pear","event_time":"2026-03-01T00:05:00.000Z","event_time_ms":1772323500000,"value":{"n":4,"ts":"2026-03-01T00:05:00Z"},"late":false}
}

// Replaying a time range: reading starts at the first record whose Kafka
// timestamp is at or after minute 2, and Run returns once the watermark has
// passed minute 4, with everything up to it written and committed.
func ExampleUntilTime() {
	c, base, err := exampleBroker()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"orders"},
		Start: base.Add(2 * time.Minute).Format(time.RFC3339)})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := signalbox.New(src,
		signalbox.WithInputs(signalbox.Input{Topic: "orders", Time: signalbox.TimeFromField, TimeField: "ts"}),
		signalbox.WithSink(jsonl.New(os.Stdout, jsonl.Options{})),
		signalbox.WithUntil(signalbox.UntilTime(base.Add(4*time.Minute))),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"topic":"orders","partition":1,"offset":0,"key":"apple","event_time":"2026-03-01T00:02:00.000Z","event_time_ms":1772323320000,"value":{"n":2,"ts":"2026-03-01T00:02:00Z"},"late":false}
	// {"topic":"orders","partition":1,"offset":1,"key":"plum","event_time":"2026-03-01T00:03:00.000Z","event_time_ms":1772323380000,"value":{"n":3,"ts":"2026-03-01T00:03:00Z"},"late":false}
	// {"topic":"orders","partition":0,"offset":1,"key":"pear","event_time":"2026-03-01T00:04:00.000Z","event_time_ms":1772323440000,"value":{"n":1,"ts":"2026-03-01T00:04:00Z"},"late":false}
}
