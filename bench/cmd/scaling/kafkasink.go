package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// outTopic is the Kafka sink's output topic in the broker process; it
// exists only while a Kafka-sink job runs, so the broker's memory holds
// one run's output at most.
const outTopic = "signalbox-out"

// admin runs fn with an admin client of broker b.
func admin(b remote, fn func(*kadm.Client) error) error {
	cl, err := kgo.NewClient(b.ClientOptions()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(kadm.NewClient(cl))
}

// createOutTopic creates outTopic with the history's partition count.
func createOutTopic(ctx context.Context, b remote) error {
	return admin(b, func(adm *kadm.Client) error {
		res, err := adm.CreateTopic(ctx, partitions, 1, nil, outTopic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return fmt.Errorf("creating the Kafka sink's topic %s: %w", outTopic, err)
		}
		return nil
	})
}

// drainOutTopic returns how many records outTopic holds (the sum of its
// partitions' end offsets: the sink is not transactional, so every offset
// is a record) and deletes it.
func drainOutTopic(ctx context.Context, b remote) (int64, error) {
	var n int64
	err := admin(b, func(adm *kadm.Client) error {
		ends, err := adm.ListEndOffsets(ctx, outTopic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return fmt.Errorf("end offsets of %s: %w", outTopic, err)
		}
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		res, err := adm.DeleteTopic(ctx, outTopic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return fmt.Errorf("deleting %s: %w", outTopic, err)
		}
		return nil
	})
	return n, err
}
