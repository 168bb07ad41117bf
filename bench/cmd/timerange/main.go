// Command timerange measures what a time-range start saves: it writes a
// history of -days days to an in-process broker (one record every -every per
// partition, Kafka timestamps spread evenly up to now), then reads it to its
// end once from the earliest offset and once with start -start, and reports
// how many records each read. With -start -1h on 7 days the range is 1/168
// of the history; the count shows how close the read comes to it.
//
//	go run ./bench/cmd/timerange -days 7 -partitions 3 -every 30s -start -1h
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/sources/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	var o options
	flag.IntVar(&o.days, "days", 7, "days of history")
	flag.IntVar(&o.partitions, "partitions", 3, "partitions of the topic")
	flag.DurationVar(&o.every, "every", 30*time.Second, "Kafka-timestamp spacing of one partition's records")
	flag.StringVar(&o.start, "start", "-1h", "start of the range (what the job's start accepts)")
	flag.Parse()
	if _, err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "timerange:", err)
		os.Exit(1)
	}
}

type options struct {
	days, partitions int
	every            time.Duration
	start            string
}

// result is what one measurement counted.
type result struct {
	history, full, ranged int64 // records written; read from earliest; read from start
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	var res result
	c, err := embedded.Start(embedded.WithTopic("history", int32(o.partitions)))
	if err != nil {
		return res, err
	}
	defer c.Close()
	if res.history, err = produce(ctx, c, o); err != nil {
		return res, err
	}
	if res.full, err = read(ctx, c, kafka.StartEarliest); err != nil {
		return res, err
	}
	if res.ranged, err = read(ctx, c, o.start); err != nil {
		return res, err
	}
	span := time.Duration(o.days) * 24 * time.Hour
	fmt.Fprintf(w, "history: %d records, %d days, %d partitions, one record per %s per partition\n", res.history, o.days, o.partitions, o.every)
	fmt.Fprintf(w, "start earliest: read %d records\n", res.full)
	fmt.Fprintf(w, "start %s: read %d records = %.3f%% of the history (1/%.0f)\n",
		o.start, res.ranged, 100*float64(res.ranged)/float64(res.history), float64(res.history)/float64(max(res.ranged, 1)))
	if d, ok := before(o.start); ok {
		fmt.Fprintf(w, "the range is %s of %s = 1/%.0f of the history\n", d, span, float64(span)/float64(d))
	}
	return res, nil
}

// before is the length of a range given as a duration before now.
func before(start string) (time.Duration, bool) {
	now := time.Now()
	t, ok, err := kafka.ParseStart(start, now)
	if err != nil || !ok {
		return 0, false
	}
	return now.Sub(t), true
}

// produce writes the history: per partition, one record every o.every
// from days ago up to now, in batches.
func produce(ctx context.Context, c *embedded.Cluster, o options) (int64, error) {
	now := time.Now()
	first := now.Add(-time.Duration(o.days) * 24 * time.Hour)
	var n int64
	batch := make([]*kgo.Record, 0, 4096)
	flush := func() error {
		err := c.Produce(ctx, batch...)
		n += int64(len(batch))
		batch = batch[:0]
		return err
	}
	for ts := first; ts.Before(now); ts = ts.Add(o.every) {
		for p := range o.partitions {
			r := embedded.Record("history", int32(p), "k", `{"v":1}`)
			r.Timestamp = ts
			batch = append(batch, r)
		}
		if len(batch) >= 4000 {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}

// read opens a source on the topic with start, polls until every partition
// reaches its start-up end offset, and counts the records delivered.
func read(ctx context.Context, c *embedded.Cluster, start string) (int64, error) {
	src, err := kafka.New(kafka.Config{Brokers: c.Addrs(), Topics: []string{"history"}, Start: start})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := src.Open(ctx); err != nil {
		return 0, err
	}
	defer src.Close()
	ends := map[string]int64{}
	pos := map[string]int64{}
	key := func(topic string, p int32) string { return fmt.Sprintf("%s/%d", topic, p) }
	var n int64
	for {
		f, err := src.Poll(ctx)
		if err != nil {
			return n, err
		}
		for _, a := range f.Assigned {
			ends[key(a.Topic, a.Partition)] = a.End
			pos[key(a.Topic, a.Partition)] = a.Start
		}
		for _, pf := range f.Partitions {
			n += int64(len(pf.Records))
			if pf.Err == nil {
				pos[key(pf.Topic, pf.Partition)] = pf.Position
			}
		}
		done := len(ends) > 0
		for k, end := range ends {
			done = done && pos[k] >= end
		}
		if done {
			return n, nil
		}
	}
}
