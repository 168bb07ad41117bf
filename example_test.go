package signalbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/script"
)

// rec builds a JSON record whose event time is in its "ts" field.
func rec(topic string, off int64, item string, ts int64) record.Record {
	v := fmt.Sprintf(`{"item":%q,"ts":%d}`, item, ts)
	return record.Record{Topic: topic, Offset: off, Key: []byte(item), Value: []byte(v)}
}

// A pipeline that reads two inputs whose partitions arrive in any order,
// drops one item cheaply before decoding, and writes JSON lines in
// event-time order. UntilEndOffsets makes Run return once every partition
// has reached the end offset it had at start-up, after flushing everything.
func Example() {
	stock := script.Partition{TopicPartition: record.TopicPartition{Topic: "stock"}, Records: []record.Record{
		rec("stock", 0, "apple", 1000), rec("stock", 1, "pear", 3000), rec("stock", 2, "plum", 3500),
	}}
	sales := script.Partition{TopicPartition: record.TopicPartition{Topic: "sales"}, Records: []record.Record{
		rec("sales", 0, "apple", 2000), rec("sales", 1, "pear", 4000),
	}}
	src := script.New(42, 2, stock, sales)

	p, err := signalbox.New(src,
		signalbox.WithInputs(
			signalbox.Input{Topic: "stock", Time: signalbox.TimeFromField, TimeField: "ts"},
			signalbox.Input{Topic: "sales", Time: signalbox.TimeFromField, TimeField: "ts"},
		),
		signalbox.WithDelay(500*time.Millisecond),
		signalbox.WithMetaFilter(func(r *record.Record) bool { return string(r.Key) != "plum" }),
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
	// {"topic":"stock","partition":0,"offset":0,"key":"apple","event_time":"1970-01-01T00:00:01.000Z","event_time_ms":1000,"value":{"item":"apple","ts":1000},"late":false}
	// {"topic":"sales","partition":0,"offset":0,"key":"apple","event_time":"1970-01-01T00:00:02.000Z","event_time_ms":2000,"value":{"item":"apple","ts":2000},"late":false}
	// {"topic":"stock","partition":0,"offset":1,"key":"pear","event_time":"1970-01-01T00:00:03.000Z","event_time_ms":3000,"value":{"item":"pear","ts":3000},"late":false}
	// {"topic":"sales","partition":0,"offset":1,"key":"pear","event_time":"1970-01-01T00:00:04.000Z","event_time_ms":4000,"value":{"item":"pear","ts":4000},"late":false}
}

// New reports every invalid option at once, naming each.
func ExampleNew_invalid() {
	_, err := signalbox.New(script.New(1, 1),
		signalbox.WithDelay(-time.Second),
		signalbox.WithMaxInflightBytes(-1),
		signalbox.WithLatePolicy("ignore"),
		signalbox.WithInputs(signalbox.Input{Topic: "t", Time: signalbox.TimeFromField}),
	)
	fmt.Println(strings.ReplaceAll(err.Error(), "\n", "\n  "))
	// Output:
	// signalbox: invalid pipeline: sinks: at least one sink is required
	//   delay: -1s is out of range: must be ≥ 0 and at most 720h (30 days)
	//   max_inflight_bytes: -1 is out of range: must be ≥ 0 and at most 1 TiB
	//   late: "ignore" is not one of emit, dead-letter, drop
	//   inputs[0].time_field: required when time is field
}

// A Process with a fork: each fork has its own scratch memory, so that a
// helper goroutine can run one on a long release's records ahead of the
// run's goroutine (a machine with a core to spare). A fork keeps no state
// from one record to the next: whoever runs it, the output is the same.
func ExampleWithProcessFork() {
	sales := script.Partition{TopicPartition: record.TopicPartition{Topic: "sales"}, Records: []record.Record{
		rec("sales", 0, "apple", 2000), rec("sales", 1, "pear", 4000), rec("sales", 2, "test", 5000),
	}}
	rename := func() signalbox.Process {
		members := map[string]json.RawMessage{} // this fork's own, reused from record to record
		return func(r *record.Record) (bool, error) {
			clear(members)
			if err := json.Unmarshal(r.Value, &members); err != nil {
				return false, err // to the dead-letter sink
			}
			if string(members["item"]) == `"test"` {
				return false, nil // filtered
			}
			members["product"] = members["item"]
			delete(members, "item")
			v, err := json.Marshal(members) // new memory: the sinks keep it
			r.Value = v
			return true, err
		}
	}
	p, err := signalbox.New(script.New(7, 2, sales),
		signalbox.WithInputs(signalbox.Input{Topic: "sales", Time: signalbox.TimeFromField, TimeField: "ts"}),
		signalbox.WithProcessFork(rename(), rename),
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
	// {"topic":"sales","partition":0,"offset":0,"key":"apple","event_time":"1970-01-01T00:00:02.000Z","event_time_ms":2000,"value":{"product":"apple","ts":2000},"late":false}
	// {"topic":"sales","partition":0,"offset":1,"key":"pear","event_time":"1970-01-01T00:00:04.000Z","event_time_ms":4000,"value":{"product":"pear","ts":4000},"late":false}
}
