package harness

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// RawConsume is the ceiling: sarama's consumer reads every partition of
// topics from the oldest offset up to the high-water mark taken at start,
// counting records, with no decoding and no ordering: fetchBytes per
// partition, maxBytes per request.
func RawConsume(ctx context.Context, brokers, topics []string, fetchBytes, maxBytes int32) (int64, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Consumer.Fetch.Default = fetchBytes
	cfg.Consumer.Fetch.Max = maxBytes
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Return.Errors = false
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return 0, err
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return 0, err
	}
	defer consumer.Close()
	var (
		n        atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, t := range topics {
		parts, err := client.Partitions(t)
		if err != nil {
			return 0, err
		}
		for _, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local, err := consumeOne(ctx, client, consumer, t, p)
				n.Add(local)
				if err != nil {
					fail(err)
				}
			}()
		}
	}
	wg.Wait()
	return n.Load(), firstErr
}

// consumeOne reads partition p of t from the oldest offset to the
// high-water mark taken first.
func consumeOne(ctx context.Context, client sarama.Client, consumer sarama.Consumer, t string, p int32) (int64, error) {
	end, err := client.GetOffset(t, p, sarama.OffsetNewest)
	if err != nil {
		return 0, err
	}
	oldest, err := client.GetOffset(t, p, sarama.OffsetOldest)
	if err != nil || end <= oldest {
		return 0, err
	}
	pc, err := consumer.ConsumePartition(t, p, sarama.OffsetOldest)
	if err != nil {
		return 0, err
	}
	defer func() {
		pc.AsyncClose()
		for range pc.Messages() { // drain until sarama closes it
		}
	}()
	var n int64
	for {
		select {
		case m := <-pc.Messages():
			n++
			if m.Offset >= end-1 {
				return n, nil
			}
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
}
