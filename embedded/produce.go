package embedded

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

// adm is the cluster's admin client (kadm over the shared kgo client).
func (c *Cluster) adm() (*kadm.Client, error) {
	cl, err := c.adminClient()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// CreateTopic creates a topic (partitions ≤ 0: the cluster default).
func (c *Cluster) CreateTopic(ctx context.Context, name string, partitions int32) error {
	adm, err := c.adm()
	if err != nil {
		return err
	}
	if partitions <= 0 {
		partitions = -1
	}
	r, err := adm.CreateTopic(ctx, partitions, -1, nil, name)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// DeleteRecords deletes every record of the partition below offset (-1:
// the high-water mark) and returns the new log start offset.
func (c *Cluster) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	adm, err := c.adm()
	if err != nil {
		return 0, err
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset})
	rs, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		return 0, fmt.Errorf("delete records %s/%d: %w", topic, partition, err)
	}
	r, ok := rs.Lookup(topic, partition)
	switch {
	case !ok:
		return 0, fmt.Errorf("delete records %s/%d: empty response", topic, partition)
	case r.Err != nil:
		return 0, fmt.Errorf("delete records %s/%d: %w", topic, partition, r.Err)
	}
	return r.LowWatermark, nil
}

// Offsets are the three offsets a broker reports for a partition.
type Offsets struct {
	LogStart, LastStable, HighWater int64
}

// ListOffsets returns the log start offset, the last stable offset and the
// high-water mark of a partition.
func (c *Cluster) ListOffsets(ctx context.Context, topic string, partition int32) (Offsets, error) {
	var out Offsets
	adm, err := c.adm()
	if err != nil {
		return out, err
	}
	for _, q := range []struct {
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
		dst  *int64
	}{{adm.ListStartOffsets, &out.LogStart}, {adm.ListCommittedOffsets, &out.LastStable}, {adm.ListEndOffsets, &out.HighWater}} {
		l, err := q.list(ctx, topic)
		if err != nil {
			return out, fmt.Errorf("list offsets %s/%d: %w", topic, partition, err)
		}
		o, ok := l.Lookup(topic, partition)
		switch {
		case !ok:
			return out, fmt.Errorf("list offsets %s/%d: empty response", topic, partition)
		case o.Err != nil:
			return out, fmt.Errorf("list offsets %s/%d: %w", topic, partition, o.Err)
		}
		*q.dst = o.Offset
	}
	return out, nil
}

// CreatePartitions grows topic to total partitions, as `kafka-topics
// --alter --partitions` does.
func (c *Cluster) CreatePartitions(ctx context.Context, topic string, total int) error {
	adm, err := c.adm()
	if err != nil {
		return err
	}
	r, err := adm.UpdatePartitions(ctx, total, topic)
	if err == nil {
		err = r.Error()
	}
	if err != nil {
		return fmt.Errorf("create partitions of %s: %w", topic, err)
	}
	return nil
}

// DeleteTopic deletes a topic.
func (c *Cluster) DeleteTopic(ctx context.Context, topic string) error {
	adm, err := c.adm()
	if err != nil {
		return err
	}
	r, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return nil
}
