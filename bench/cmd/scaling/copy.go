package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/internal/workload"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/jsonl"
)

// jsonlCopy is the peer a user would write without ordering: franz-go's
// consumer (harness.ConsumeToEnd: its defaults, the shape's
// authentication, up to the end offsets listed first) writing every
// fetched partition's records, as they come, unordered, into signalbox's
// JSONL file sink (sinks/jsonl.Create with its default options: the same
// line renderer, 256 KiB buffer and block reservation as in `signalbox
// run`), with the event time signalbox's `time: timestamp` job gives
// them (the Kafka timestamp; the reference topic timeless, as `time:
// none`). The same bytes of work per record as the ordered replay into
// the JSONL sink, minus the ordering. It returns how many records it
// wrote.
func jsonlCopy(ctx context.Context, b remote, topics []string, path string) (int64, error) {
	sink := jsonl.Create(path, jsonl.Options{})
	if err := sink.Open(ctx); err != nil {
		return 0, err
	}
	var batch []record.Record
	n, err := harness.ConsumeToEnd(ctx, b.ClientOptions(), topics, func(p kgo.FetchTopicPartition) error {
		batch = batch[:0]
		for _, r := range p.Records {
			rec := record.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
				Timestamp: r.Timestamp, EventTime: r.Timestamp.UnixMilli(), Timeless: r.Topic == workload.ReferenceTopic}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, record.Header{Key: h.Key, Value: h.Value})
			}
			batch = append(batch, rec)
		}
		return sink.Write(ctx, batch)
	})
	if err = errors.Join(err, sink.Close()); err != nil {
		return n, fmt.Errorf("copying into %s: %w", path, err)
	}
	return n, nil
}
