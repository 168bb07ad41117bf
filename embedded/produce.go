package embedded

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record builds a record for the helpers: Record.Partition is honoured
// (the helpers use a manual partitioner).
func Record(topic string, partition int32, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

// producerOpts are the options of every producing helper client.
func (c *Cluster) producerOpts(extra ...kgo.Opt) []kgo.Opt {
	return append(append(c.ClientOptions(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(100_000),
	), extra...)
}

// Produce writes recs outside any transaction and waits until all are
// acknowledged.
func (c *Cluster) Produce(ctx context.Context, recs ...*kgo.Record) error {
	cl, err := kgo.NewClient(c.producerOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

var txnSeq atomic.Int64

// Txn is a transaction left open by OpenTxn.
type Txn struct {
	cl   *kgo.Client
	once sync.Once
}

// OpenTxn begins a transaction, writes recs in it and leaves it open: the
// records sit above the last stable offset until Commit or Abort.
func (c *Cluster) OpenTxn(ctx context.Context, recs ...*kgo.Record) (*Txn, error) {
	id := "embedded-txn-" + strconv.FormatInt(txnSeq.Add(1), 10)
	cl, err := kgo.NewClient(c.producerOpts(kgo.TransactionalID(id))...)
	if err != nil {
		return nil, err
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return nil, err
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		cl.Close()
		return nil, err
	}
	t := &Txn{cl: cl}
	c.onClose(t.close)
	return t, nil
}

// Commit commits the transaction; it writes a commit marker per partition.
func (t *Txn) Commit(ctx context.Context) error { return t.end(ctx, kgo.TryCommit) }

// Abort aborts the transaction; it writes an abort marker per partition.
func (t *Txn) Abort(ctx context.Context) error { return t.end(ctx, kgo.TryAbort) }

func (t *Txn) end(ctx context.Context, how kgo.TransactionEndTry) error {
	defer t.close()
	return t.cl.EndTransaction(ctx, how)
}

func (t *Txn) close() { t.once.Do(t.cl.Close) }

// ProduceTxn writes recs in one transaction and commits it (commit true) or
// aborts it.
func (c *Cluster) ProduceTxn(ctx context.Context, commit bool, recs ...*kgo.Record) error {
	t, err := c.OpenTxn(ctx, recs...)
	if err != nil {
		return err
	}
	if commit {
		return t.Commit(ctx)
	}
	return t.Abort(ctx)
}

// CreateTopic creates a topic (partitions ≤ 0: the cluster default).
func (c *Cluster) CreateTopic(ctx context.Context, name string, partitions int32) error {
	cl, err := c.adminClient()
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, -1
	if partitions <= 0 {
		t.NumPartitions = -1
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return fmt.Errorf("create topic %s: %w", rt.Topic, err)
		}
	}
	return nil
}

// DeleteRecords deletes every record of the partition below offset (-1:
// the high-water mark) and returns the new log start offset.
func (c *Cluster) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	cl, err := c.adminClient()
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	p := kmsg.NewDeleteRecordsRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	var parts []kmsg.DeleteRecordsResponseTopicPartition
	if len(resp.Topics) > 0 {
		parts = resp.Topics[0].Partitions
	}
	rp, err := onePartition("delete records", topic, partition, parts,
		func(p kmsg.DeleteRecordsResponseTopicPartition) int16 { return p.ErrorCode })
	return rp.LowWatermark, err
}

// onePartition returns the answer of a one-partition request, or its error.
func onePartition[P any](what, topic string, partition int32, parts []P, code func(P) int16) (P, error) {
	var zero P
	if len(parts) == 0 {
		return zero, fmt.Errorf("%s %s/%d: empty response", what, topic, partition)
	}
	if err := kerr.ErrorForCode(code(parts[0])); err != nil {
		return zero, fmt.Errorf("%s %s/%d: %w", what, topic, partition, err)
	}
	return parts[0], nil
}

// Offsets are the three offsets a broker reports for a partition.
type Offsets struct {
	LogStart, LastStable, HighWater int64
}

// ListOffsets returns the log start offset, the last stable offset and the
// high-water mark of a partition.
func (c *Cluster) ListOffsets(ctx context.Context, topic string, partition int32) (Offsets, error) {
	var out Offsets
	for _, q := range []struct {
		ts        int64
		isolation int8
		dst       *int64
	}{{-2, 0, &out.LogStart}, {-1, 1, &out.LastStable}, {-1, 0, &out.HighWater}} {
		off, err := c.listOffset(ctx, topic, partition, q.ts, q.isolation)
		if err != nil {
			return out, err
		}
		*q.dst = off
	}
	return out, nil
}

func (c *Cluster) listOffset(ctx context.Context, topic string, partition int32, ts int64, isolation int8) (int64, error) {
	cl, err := c.adminClient()
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp = partition, ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	var parts []kmsg.ListOffsetsResponseTopicPartition
	if len(resp.Topics) > 0 {
		parts = resp.Topics[0].Partitions
	}
	rp, err := onePartition("list offsets", topic, partition, parts,
		func(p kmsg.ListOffsetsResponseTopicPartition) int16 { return p.ErrorCode })
	return rp.Offset, err
}
