package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/bench/harness"
	"github.com/signalbox/signalbox/internal/workload"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sinks/envelope"
	"github.com/signalbox/signalbox/sinks/jsonl"
)

// jsonlCopy is the peer a user would write without ordering: franz-go's
// consumer (harness.ConsumeToEnd: its defaults, the shape's
// authentication, up to the end offsets listed first) writing every record
// to a JSONL file at path as it is fetched, unordered, in the line format
// of signalbox's JSONL sink (sinks/envelope's Encoder, the sink's own
// renderer) with the event time signalbox's `time: timestamp` job gives it
// (the Kafka timestamp; the reference topic timeless, as `time: none`),
// through a buffer of the sink's default size (jsonl.DefaultBufferSize).
// The same bytes of work per record as the ordered replay into the JSONL
// sink, minus the ordering. It returns how many records it wrote.
func jsonlCopy(ctx context.Context, b remote, topics []string, path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(f, jsonl.DefaultBufferSize)
	var (
		enc  envelope.Encoder
		rec  record.Record
		line []byte
	)
	n, err := harness.ConsumeToEnd(ctx, b.ClientOptions(), topics, func(p kgo.FetchTopicPartition) error {
		for _, r := range p.Records {
			rec = record.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
				Timestamp: r.Timestamp, EventTime: r.Timestamp.UnixMilli(), Timeless: r.Topic == workload.ReferenceTopic}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, record.Header{Key: h.Key, Value: h.Value})
			}
			line = append(enc.Append(line[:0], &rec), '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
	if err = errors.Join(err, bw.Flush(), f.Close()); err != nil {
		return n, fmt.Errorf("copying into %s: %w", path, err)
	}
	return n, nil
}
