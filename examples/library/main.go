// Command library is signalbox used as a Go library: it reads topics from a
// Kafka cluster with sources/kafka, orders the records by the event time in
// their JSON "ts" field (or the Kafka timestamp), and writes them to standard
// output as JSON lines.
//
//	go run ./examples/library -brokers 127.0.0.1:9092 -topics orders -time-field ts
//
// With -replay it stops once the history present at start-up is written
// (exit 0); without it, it keeps running live until interrupted (Ctrl-C),
// then flushes and commits before it exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/sinks/jsonl"
	"github.com/signalbox/signalbox/sources/kafka"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated host:port")
	topics := flag.String("topics", "orders", "topics to read, comma-separated")
	group := flag.String("group", "", "consumer group (empty: read every partition, commit nothing)")
	timeField := flag.String("time-field", "", "JSON field holding the event time (empty: the Kafka timestamp)")
	delay := flag.Duration("delay", 2*time.Second, "how long a record may lag behind newer ones and still be in order")
	start := flag.String("start", "earliest", "where a partition without a committed offset starts: earliest, latest, an RFC 3339 time or -36h")
	replay := flag.Bool("replay", false, "stop once the history present at start-up is written")
	flag.Parse()
	if err := run(*brokers, *topics, *group, *timeField, *start, *delay, *replay); err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
}

func run(brokers, topics, group, timeField, start string, delay time.Duration, replay bool) error {
	// How each topic's records are decoded: where the event time is.
	var inputs []signalbox.Input
	for _, t := range strings.Split(topics, ",") {
		in := signalbox.Input{Topic: t, Time: signalbox.TimeFromTimestamp}
		if timeField != "" {
			in.Time, in.TimeField = signalbox.TimeFromField, timeField
		}
		inputs = append(inputs, in)
	}

	// The source: which cluster, the topics the inputs name (declared once:
	// New refuses an input naming a topic the source does not read), and
	// where to start. Every other field takes its documented default.
	names, patterns := signalbox.InputTopics(inputs...)
	src, err := kafka.New(kafka.Config{
		Brokers:       strings.Split(brokers, ","),
		Topics:        names,
		TopicPatterns: patterns,
		Group:         group,
		Start:         start,
	})
	if err != nil {
		return err
	}

	until := signalbox.UntilLive
	if replay {
		until = signalbox.UntilEndOffsets
	}
	p, err := signalbox.New(src,
		signalbox.WithInputs(inputs...),
		signalbox.WithDelay(delay),
		signalbox.WithSink(jsonl.New(os.Stdout, jsonl.Options{})),
		// Records that cannot be decoded go to standard error with their
		// reason rather than stopping the job.
		signalbox.WithDeadLetter(jsonl.New(os.Stderr, jsonl.Options{})),
		signalbox.WithUntil(until),
	)
	if err != nil {
		return err
	}

	// Run returns nil on cancellation after a last flush and commit.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return p.Run(ctx)
}
