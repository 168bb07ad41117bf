package kafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/record"
)

// The fetch transport: the fetcher builds each FetchRequest itself and
// sends it through the client's own connection to the leader
// (kgo.Broker.Request), authenticated and encrypted as the client is, so
// that plaintext, TLS and SASL take this one path. kmsg leaves a
// response's record batches as raw bytes, which kbatch decodes without a
// heap object per record; the fetcher reads the position from them
// (invariant 2), which franz-go's own consumer does not expose.

// fetchFrom sends group's fetch to broker id and returns the answer per
// partition. A transport error fails the whole request; the client
// reconnects on the next one.
func (f *fetcher) fetchFrom(ctx context.Context, id int32, group []*partState) (map[record.TopicPartition]*fetchBlock, error) {
	kresp, err := f.s.cl.Broker(int(id)).Request(ctx, f.request(group))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("kafka: fetch from broker %d at %s: %w", id, f.s.brokerAddr(id), err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	blocks := make(map[record.TopicPartition]*fetchBlock, len(group))
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			fb := &fetchBlock{err: kerr.ErrorForCode(p.ErrorCode), hwm: p.HighWatermark, lso: p.LastStableOffset, raw: p.RecordBatches}
			for _, a := range p.AbortedTransactions {
				fb.aborted = append(fb.aborted, abortedTxn{a.ProducerID, a.FirstOffset})
			}
			blocks[record.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = fb
		}
	}
	return blocks, nil
}

// request is the FetchRequest for group: sessionless (every request names
// every partition), at the source's isolation level, waiting as fetchWait
// says.
func (f *fetcher) request(group []*partState) *kmsg.FetchRequest {
	wait := f.s.fetchWait(time.Now(), f.hasPaused)
	if f.noWait {
		wait = 0
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = f.s.cfg.FetchMaxBytes
	req.SessionEpoch = -1
	if f.s.cfg.readCommitted() {
		req.IsolationLevel = 1
	}
	// A random partition order, so that no partition is systematically
	// last in the broker's filling of the response (KIP-74); partitions
	// are grouped under their topic in the order the topics first appear.
	order := make([]*partState, len(group))
	copy(order, group)
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	topicAt := make(map[string]int, 1)
	for _, p := range order {
		i := topicSlot(&req.Topics, topicAt, p.tp.Topic, func(name string) kmsg.FetchRequestTopic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = name
			return t
		})
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.FetchOffset = p.pos
		rp.PartitionMaxBytes = p.maxBytes
		rp.LogStartOffset = -1
		rp.CurrentLeaderEpoch = -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}
