package demo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/internal/workload"
	"github.com/signalbox/signalbox/sinks/jsonl"
	kafkasink "github.com/signalbox/signalbox/sinks/kafka"
)

// The real sinks whose readers measure visible latency (Options.Visible).
const (
	// VisibleJSONL is the JSONL file sink (at-least-once), read by a reader
	// that tails the file.
	VisibleJSONL = "jsonl"
	// VisibleKafka is the Kafka sink (at-least-once, idempotent), read by a
	// read_committed consumer of its topic.
	VisibleKafka = "kafka"
	// VisibleKafkaTxn is the Kafka sink in transactional mode (exactly-once:
	// it commits at each checkpoint), read by a read_committed consumer.
	VisibleKafkaTxn = "kafka-txn"
)

// VisibleKinds lists the kinds of Options.Visible.
var VisibleKinds = []string{VisibleJSONL, VisibleKafka, VisibleKafkaTxn}

// pollEvery is how often the file reader looks for new lines at the end of
// the file: the resolution of the JSONL visible latency.
const pollEvery = time.Millisecond

// tap is a lane's real sink and the reader that sees what it wrote.
type tap struct {
	sink signalbox.Sink
	// read reads from the start until ctx is done, calling seen with the
	// event time (unix ms) of every timed record as soon as it is readable.
	read func(ctx context.Context, seen func(eventTimeMs int64, late bool)) error
}

// newTap creates the real sink of kind for lane name: a file in dir, or a
// new topic on c with as many partitions as the inputs.
func newTap(ctx context.Context, kind, name, dir string, c *embedded.Cluster, partitions int) (*tap, error) {
	switch kind {
	case VisibleJSONL:
		path := filepath.Join(dir, name+".jsonl")
		return &tap{sink: jsonl.Create(path, jsonl.Options{}), read: func(ctx context.Context, seen func(int64, bool)) error {
			return tailJSONL(ctx, path, seen)
		}}, nil
	case VisibleKafka, VisibleKafkaTxn:
		topic := "ordered-" + name
		if err := c.CreateTopic(ctx, topic, int32(partitions)); err != nil {
			return nil, err
		}
		cfg := kafkasink.Config{Brokers: c.Addrs(), Topic: topic}
		if kind == VisibleKafkaTxn {
			cfg.TransactionalID, cfg.GroupID = "demo-"+name, "demo-"+name
		}
		return &tap{sink: kafkasink.New(cfg), read: func(ctx context.Context, seen func(int64, bool)) error {
			return readCommitted(ctx, c.Addrs(), topic, seen)
		}}, nil
	}
	return nil, fmt.Errorf("demo: visible sink %q is not one of %v", kind, VisibleKinds)
}

// intAfter returns the integer that follows the first occurrence of field
// in b (a JSON member name with its colon), and whether there is one. The
// readers parse only that much of each line, so that reading the history
// before the live records costs little and does not delay them.
func intAfter(b []byte, field string) (int64, bool) {
	i := bytes.Index(b, []byte(field))
	if i < 0 {
		return 0, false
	}
	b = b[i+len(field):]
	j := 0
	for j < len(b) && (b[j] == '-' || b[j] >= '0' && b[j] <= '9') {
		j++
	}
	n, err := strconv.ParseInt(string(b[:j]), 10, 64)
	return n, err == nil
}

// late reports the envelope's late flag. The envelope writes it after the
// value, and later members are strings (quotes escaped), so the last
// "late": member of a line is the envelope's.
func late(line []byte) bool {
	const f = `"late":`
	i := bytes.LastIndex(line, []byte(f))
	return i >= 0 && bytes.HasPrefix(line[i+len(f):], []byte("true"))
}

// tailJSONL follows the file at path as `tail -f` does, from its start,
// polling for new complete lines every pollEvery.
func tailJSONL(ctx context.Context, path string, seen func(int64, bool)) error {
	var f *os.File
	for {
		var err error
		if f, err = os.Open(path); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if !sleep(ctx, pollEvery) {
			return nil
		}
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var partial []byte
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull):
			partial = append(partial, line...)
			if errors.Is(err, io.EOF) && !sleep(ctx, pollEvery) {
				return nil
			}
			continue
		case err != nil:
			return err
		}
		if len(partial) > 0 {
			line = append(partial, line...)
			partial = partial[:0]
		}
		if et, ok := intAfter(line, `"event_time_ms":`); ok {
			seen(et, late(line))
		}
	}
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// tsField is the workload's event-time member.
var tsField = `"` + workload.TimeField + `":`

// readCommitted consumes topic from its start with a read_committed
// franz-go consumer (its other settings default) and reports the event
// time of every record whose value carries one (the workload's ts field,
// or for an Avro value the Kafka timestamp).
// The Kafka sink carries no late flag, so every record counts as on time.
func readCommitted(ctx context.Context, brokers []string, topic string, seen func(int64, bool)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("demo: reading %s: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if et, ok := intAfter(r.Value, tsField); ok {
				seen(et, false)
			} else if len(r.Value) > 0 && r.Value[0] == 0 {
				// An Avro value, passed through in the Confluent wire
				// format (magic byte 0): the sink wrote its event time as
				// the Kafka timestamp.
				seen(r.Timestamp.UnixMilli(), false)
			}
		})
	}
}
