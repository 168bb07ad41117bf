package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/IBM/sarama"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("kafka: sink closed")

// Config configures the sink.
type Config struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// Topic is the output topic. It must exist. Required.
	Topic string
	// TransactionalID turns on transactional mode (invariant 5). Default
	// empty: idempotent, non-transactional.
	TransactionalID string
	// GroupID is the consumer group whose offsets FlushCheckpoint commits and
	// Restore reads. Required for FlushCheckpoint and Restore. Use a group
	// whose offsets nothing else commits.
	GroupID string
	// Sarama is the base client configuration (TLS, SASL, client id,
	// compression...). Default sarama.NewConfig() with Version V2_8_0_0.
	// The sink always overrides the settings invariants 1 and 5 rely on:
	// idempotence, acks, MaxOpenRequests, the manual partitioner, returned
	// successes and the transactional id.
	Sarama *sarama.Config
}

// Sink is the Kafka sink.
type Sink struct {
	cfg        Config
	maxBytes   int // the producer's MaxMessageBytes
	client     sarama.Client
	producer   sarama.AsyncProducer
	partitions int32

	mu      sync.Mutex
	cond    *sync.Cond
	pending int   // produced, not yet acknowledged
	prodErr error // first produce error since the last Flush
	done    chan struct{}

	inTxn  bool
	txnBuf []record.Record // records of the open transaction, for re-production after an abort
	resend bool
	err    error
}

// New returns a sink; call Open before use.
func New(cfg Config) *Sink { return &Sink{cfg: cfg} }

func (s *Sink) saramaConfig() *sarama.Config {
	c := s.cfg.Sarama
	if c == nil {
		c = sarama.NewConfig()
		c.Version = sarama.V2_8_0_0
	} else {
		cp := *c
		c = &cp
	}
	c.Producer.Idempotent = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Net.MaxOpenRequests = 1
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	if c.Producer.Retry.Max < 1 {
		c.Producer.Retry.Max = 10
	}
	if s.cfg.TransactionalID != "" {
		c.Producer.Transaction.ID = s.cfg.TransactionalID
	}
	return c
}

// BytesOnly reports that the sink produces keys and values as their
// original bytes (schema'd ones keep their wire format and schema id), so
// the engine need not decode them for it (signalbox.BytesSink).
func (s *Sink) BytesOnly() bool { return true }

// Open connects and starts the producer.
func (s *Sink) Open(ctx context.Context) error {
	if len(s.cfg.Brokers) == 0 || s.cfg.Topic == "" {
		return errors.New("kafka: Brokers and Topic are required")
	}
	sc := s.saramaConfig()
	client, err := sarama.NewClient(s.cfg.Brokers, sc)
	if err != nil {
		return retry.Retryable(fmt.Errorf("kafka: %w", err))
	}
	ps, err := client.Partitions(s.cfg.Topic)
	if err != nil || len(ps) == 0 {
		client.Close()
		return fmt.Errorf("kafka: output topic %q: %v", s.cfg.Topic, err)
	}
	// The topic's own limit may be lower than the producer's: a batch over
	// it would fail (and, in transactional mode, the transaction). The
	// client shares sc, so the producer made below uses the lower limit.
	if limit, ok := topicMaxMessageBytes(client, s.cfg.Topic); ok && limit-logOverhead < sc.Producer.MaxMessageBytes {
		sc.Producer.MaxMessageBytes = limit - logOverhead
	}
	s.maxBytes = sc.Producer.MaxMessageBytes - batchOverhead
	producer, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		client.Close()
		return fmt.Errorf("kafka: %w", err)
	}
	s.client, s.producer, s.partitions = client, producer, int32(len(ps))
	s.cond = sync.NewCond(&s.mu)
	s.done = make(chan struct{})
	go s.acks()
	return nil
}

// acks drains the producer's result channels.
func (s *Sink) acks() {
	defer close(s.done)
	succ, errs := s.producer.Successes(), s.producer.Errors()
	for succ != nil || errs != nil {
		select {
		case _, ok := <-succ:
			if !ok {
				succ = nil
				continue
			}
			s.ack(nil)
		case pe, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			s.ack(pe.Err)
		}
	}
}

func (s *Sink) ack(err error) {
	s.mu.Lock()
	s.pending--
	if err != nil && s.prodErr == nil {
		s.prodErr = err
	}
	s.cond.Broadcast()
	s.mu.Unlock()
}

// Partition returns the output partition of r among n partitions
// (invariant 3).
func Partition(r *record.Record, n int32) int32 {
	k := []byte(r.OrderKey)
	if len(k) == 0 {
		k = r.Key
	}
	if len(k) == 0 {
		return 0
	}
	return int32(murmur2(k)&0x7fffffff) % n
}

// murmur2 is the Java client's hash (org.apache.kafka.common.utils.Utils).
func murmur2(data []byte) uint32 {
	const seed, m, r = uint32(0x9747b28c), uint32(0x5bd1e995), 24
	n := len(data)
	h := seed ^ uint32(n)
	for ; len(data) >= 4; data = data[4:] {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// Write produces batch (asynchronously; Flush waits for the acks).
func (s *Sink) Write(ctx context.Context, batch []record.Record) error {
	if err := s.ready(); err != nil {
		return err
	}
	if err := s.oversized(batch); err != nil {
		return err
	}
	if err := s.begin(); err != nil { // re-produces an aborted transaction first
		return err
	}
	if s.cfg.TransactionalID != "" {
		s.txnBuf = append(s.txnBuf, batch...)
	}
	s.produce(batch)
	return nil
}

// begin opens a transaction if none is open and re-produces an aborted one.
func (s *Sink) begin() error {
	if s.cfg.TransactionalID == "" || s.inTxn {
		return nil
	}
	if err := s.producer.BeginTxn(); err != nil {
		return s.txnFailure(err)
	}
	s.inTxn = true
	if s.resend {
		s.resend = false
		s.produce(s.txnBuf)
	}
	return nil
}

// Record batch sizes (Kafka's DefaultRecordBatch): the broker compares a
// batch with the topic's max.message.bytes including its log overhead
// (offset and length, 12 bytes); sarama counts a batch from its 49-byte
// header on and keeps it below Producer.MaxMessageBytes.
const (
	logOverhead   = 12
	batchOverhead = 49
)

// topicMaxMessageBytes returns the topic's max.message.bytes, when the
// cluster tells (DescribeConfigs may be denied; the producer's limit then
// stands).
func topicMaxMessageBytes(client sarama.Client, topic string) (int, bool) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return 0, false
	}
	// Not admin.Close: it would close the shared client.
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"max.message.bytes"}})
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Value); e.Name == "max.message.bytes" && err == nil && n > batchOverhead+logOverhead {
			return n, true
		}
	}
	return 0, false
}

// oversized rejects, before anything of batch is produced, the records
// the producer or the topic would refuse as too large (invariant 8):
// produced, such a record would fail the producer, and the transaction.
func (s *Sink) oversized(batch []record.Record) error {
	var rej []retry.Rejection
	for i := range batch {
		if n := message(&batch[i], s.cfg.Topic, 0).ByteSize(2); n > s.maxBytes {
			rej = append(rej, retry.Rejection{Record: batch[i],
				Reason: fmt.Sprintf("kafka: record of %d bytes exceeds the %d bytes a batch of %s can hold (max.message.bytes, Producer.MaxMessageBytes)", n, s.maxBytes, s.cfg.Topic)})
		}
	}
	return retry.Rejected(rej...)
}

// message builds the output message of r.
func message(r *record.Record, topic string, partition int32) *sarama.ProducerMessage {
	msg := &sarama.ProducerMessage{Topic: topic, Partition: partition}
	if r.Key != nil {
		msg.Key = sarama.ByteEncoder(r.Key)
	}
	if r.Value != nil {
		msg.Value = sarama.ByteEncoder(r.Value)
	}
	for _, h := range r.Headers {
		msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	if !r.Timeless && r.EventTime > 0 {
		msg.Timestamp = timeOf(r.EventTime)
	}
	return msg
}

func (s *Sink) produce(batch []record.Record) {
	for i := range batch {
		msg := message(&batch[i], s.cfg.Topic, Partition(&batch[i], s.partitions))
		s.mu.Lock()
		s.pending++
		s.mu.Unlock()
		s.producer.Input() <- msg
	}
}

// Flush waits for every acknowledgement and, in transactional mode, commits.
func (s *Sink) Flush(ctx context.Context) error {
	return s.flush(ctx, nil)
}

// FlushCheckpoint commits the written records and cp's Low offsets for
// Config.GroupID in one transaction (invariant 5).
func (s *Sink) FlushCheckpoint(ctx context.Context, cp record.Checkpoint) error {
	if !s.CommitsSourceOffsets() {
		return s.flush(ctx, nil) // not transactional: a plain flush
	}
	return s.flush(ctx, &cp)
}

// CommitsSourceOffsets reports whether the sink commits the consumer
// offsets itself, inside its transaction (transactional mode with a group).
// signalbox then does not commit them through the source, which would
// overwrite the checkpoint the transaction stored.
func (s *Sink) CommitsSourceOffsets() bool {
	return s.cfg.TransactionalID != "" && s.cfg.GroupID != ""
}

func (s *Sink) flush(ctx context.Context, cp *record.Checkpoint) error {
	if err := s.ready(); err != nil {
		return err
	}
	if s.resend || (cp != nil && !s.inTxn) {
		if err := s.begin(); err != nil {
			return err
		}
	}
	if err := s.wait(ctx); err != nil {
		if s.cfg.TransactionalID != "" {
			return s.txnFailure(err)
		}
		s.err = fmt.Errorf("kafka: %w", err)
		return s.err
	}
	if !s.inTxn {
		return nil
	}
	if cp != nil {
		if err := s.producer.AddOffsetsToTxn(offsets(cp), s.cfg.GroupID); err != nil {
			return s.txnFailure(err)
		}
	}
	if err := s.producer.CommitTxn(); err != nil {
		return s.txnFailure(err)
	}
	s.inTxn = false
	s.txnBuf = s.txnBuf[:0]
	return nil
}

// wait blocks until every produced record is acknowledged.
func (s *Sink) wait(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.pending > 0 && ctx.Err() == nil {
		s.cond.Wait()
	}
	if s.pending > 0 {
		return ctx.Err()
	}
	err := s.prodErr
	s.prodErr = nil
	return err
}

// txnFailure applies invariant 6.
func (s *Sink) txnFailure(err error) error {
	status := s.producer.TxnStatus()
	if status&sarama.ProducerTxnFlagFatalError == 0 && status&sarama.ProducerTxnFlagAbortableError != 0 {
		if aerr := s.producer.AbortTxn(); aerr == nil {
			s.inTxn, s.resend = false, len(s.txnBuf) > 0
			return retry.Retryable(fmt.Errorf("kafka: transaction aborted: %w", err))
		}
	}
	s.err = fmt.Errorf("kafka: %w", err)
	return s.err
}

// metadata is the rest of a partition's checkpoint, stored with its offset.
// Watermark is the partition's own PartitionCheckpoint.Watermark. Builds
// before per-partition watermarks stored Checkpoint.Watermark there, with
// the same version: that value is never above a partition's watermark, so
// restoring it as the partition's watermark is conservative, and an older
// build taking the min over partitions of the new values still gets a bound
// that holds for every partition.
type metadata struct {
	V         int   `json:"v"`
	Position  int64 `json:"p"`
	End       int64 `json:"e"`
	Replaying bool  `json:"r,omitempty"`
	Watermark int64 `json:"w"`
}

func offsets(cp *record.Checkpoint) map[string][]*sarama.PartitionOffsetMetadata {
	out := map[string][]*sarama.PartitionOffsetMetadata{}
	for _, p := range cp.Partitions {
		b, _ := json.Marshal(metadata{V: 1, Position: p.Position, End: p.End, Replaying: p.Replaying, Watermark: p.Watermark})
		md := string(b)
		out[p.Topic] = append(out[p.Topic], &sarama.PartitionOffsetMetadata{Partition: p.Partition, Offset: p.Low, LeaderEpoch: -1, Metadata: &md})
	}
	return out
}

// Restore returns the checkpoint committed for Config.GroupID, or nil. Each
// partition gets the watermark stored in its metadata, and
// Checkpoint.Watermark is the min over partitions. When an offset carries no
// signalbox metadata (committed by another client), Position is Low, End is
// -1 and the partition's watermark is unknown (math.MinInt64), so is
// Checkpoint.Watermark: nothing is skipped on restart, so delivery falls
// back to at-least-once.
func (s *Sink) Restore(ctx context.Context) (*record.Checkpoint, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	if s.cfg.GroupID == "" {
		return nil, nil
	}
	admin, err := sarama.NewClusterAdminFromClient(s.client)
	if err != nil {
		return nil, retry.Retryable(fmt.Errorf("kafka: %w", err))
	}
	// Not admin.Close: it would close the shared client.
	resp, err := admin.ListConsumerGroupOffsets(s.cfg.GroupID, nil)
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, retry.Retryable(fmt.Errorf("kafka: fetching offsets of %s: %w", s.cfg.GroupID, err))
	}
	cp := &record.Checkpoint{Watermark: math.MaxInt64}
	for topic, parts := range resp.Blocks {
		for p, b := range parts {
			if b.Err != sarama.ErrNoError || b.Offset < 0 {
				continue
			}
			pc := record.PartitionCheckpoint{TopicPartition: record.TopicPartition{Topic: topic, Partition: p},
				Low: b.Offset, Position: b.Offset, End: -1, Watermark: math.MinInt64}
			var md metadata
			if json.Unmarshal([]byte(b.Metadata), &md) == nil && md.V == 1 {
				pc.Position, pc.End, pc.Replaying, pc.Watermark = md.Position, md.End, md.Replaying, md.Watermark
			}
			cp.Watermark = min(cp.Watermark, pc.Watermark)
			cp.Partitions = append(cp.Partitions, pc)
		}
	}
	if len(cp.Partitions) == 0 {
		return nil, nil
	}
	sortPartitions(cp.Partitions)
	return cp, nil
}

// Close shuts the producer. In transactional mode it never commits: an open
// transaction is aborted (invariant 7), so records that no FlushCheckpoint
// committed stay invisible to read_committed readers. Otherwise it first
// waits for the acknowledgement of everything produced.
func (s *Sink) Close() error {
	if errors.Is(s.err, ErrClosed) {
		return ErrClosed
	}
	err := s.err
	if s.producer != nil {
		if err == nil && s.cfg.TransactionalID == "" {
			err = s.Flush(context.Background())
		}
		if s.inTxn {
			if aerr := s.producer.AbortTxn(); aerr != nil {
				// The broker aborts it at the transaction timeout, or when
				// the next instance with this TransactionalID starts.
				err = errors.Join(err, fmt.Errorf("kafka: aborting the open transaction: %w", aerr))
			}
			s.inTxn = false
		}
		err = errors.Join(err, s.producer.Close())
		<-s.done
		_ = s.client.Close()
	}
	s.err = ErrClosed
	return err
}

func (s *Sink) ready() error {
	if s.err != nil {
		return s.err
	}
	if s.producer == nil {
		return errors.New("kafka: sink not open")
	}
	return nil
}
