package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox/bench/harness"
)

// runChild runs one raw consumer and prints how many records it read.
func runChild(c config, stdout io.Writer) error {
	ctx := context.Background()
	brokers, topics := strings.Split(c.brokers, ","), strings.Split(c.topics, ",")
	var (
		n   int64
		err error
	)
	switch c.child {
	case franz:
		n, err = franzConsume(ctx, brokers, topics)
	case sarama:
		// sarama's ConsumePartition per partition with 1 MiB fetches (its
		// default Consumer.Fetch.Default), 64 MiB per request as in
		// benchall's ceiling.
		n, err = harness.RawConsume(ctx, brokers, topics, 1<<20, 64<<20)
	default:
		err = fmt.Errorf("-child: %q is not %s or %s", c.child, franz, sarama)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, n)
	return err
}

// franzConsume is the ceiling: franz-go's consumer with its defaults
// (from the start of each partition) polls every partition of topics up to
// the end offsets listed first, counting records; nothing is decoded.
func franzConsume(ctx context.Context, brokers, topics []string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return 0, err
	}
	if err := ends.Error(); err != nil {
		return 0, err
	}
	left := map[string]map[int32]int64{} // partitions not read to their end
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if left[o.Topic] == nil {
				left[o.Topic] = map[int32]int64{}
			}
			left[o.Topic][o.Partition] = o.Offset
		}
	})
	var n int64
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			return n, fmt.Errorf("%s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			n += int64(len(p.Records))
			if k := len(p.Records); k > 0 && p.Records[k-1].Offset+1 >= left[p.Topic][p.Partition] {
				delete(left[p.Topic], p.Partition)
				if len(left[p.Topic]) == 0 {
					delete(left, p.Topic)
				}
			}
		})
	}
	return n, nil
}
