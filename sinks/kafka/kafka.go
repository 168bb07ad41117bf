package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/internal/startup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("kafka: sink closed")

// ErrStartupTimeout is wrapped by the error of an Open that a broker did
// not answer by the start-up deadline.
var ErrStartupTimeout = startup.ErrTimeout

// DefaultStartupTimeout is Config.StartupTimeout's default.
const DefaultStartupTimeout = 30 * time.Second

// DefaultBatchBytes is the largest record batch the producer sends when the
// output topic's max.message.bytes is not lower: Kafka's default
// max.message.bytes.
const DefaultBatchBytes = 1_000_012

// DefaultMaxBufferedRecords is Config.MaxBufferedRecords's default. It is
// lower than kgo's 50,000 so that the records in flight (kgo's copies and
// the bytes they point to) stay in the CPU's caches until sent: about a
// fifth less CPU per record in BenchmarkProduce, still with batches of
// thousands of small records.
const DefaultMaxBufferedRecords = 10_000

// MaxMaxBufferedRecords is the largest Config.MaxBufferedRecords: kgo's own
// default is 50,000, and each buffered record holds its bytes.
const MaxMaxBufferedRecords = 1_000_000

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	c.MaxBufferedRecords = cmp.Or(c.MaxBufferedRecords, DefaultMaxBufferedRecords)
}

// Validate reports settings out of range, each naming its job-file field
// (fielderr); it judges each as written, so call EnsureDefaults first to
// accept zero values (New does). Open calls it.
func (c Config) Validate() error {
	if c.MaxBufferedRecords < 1 || c.MaxBufferedRecords > MaxMaxBufferedRecords {
		return fmt.Errorf("kafka: %w", fielderr.New("max_buffered_records",
			"%d is out of range: must be from 1 to %d (leave it out for the default, %d)", c.MaxBufferedRecords, MaxMaxBufferedRecords, DefaultMaxBufferedRecords))
	}
	return nil
}

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
	// StartupTimeout bounds Open (see Open).
	// Default DefaultStartupTimeout, 30s.
	StartupTimeout time.Duration
	// MaxBufferedRecords bounds the records produced and not yet
	// acknowledged: Write waits for acknowledgements beyond it. It also
	// bounds the rate to MaxBufferedRecords per round trip to the brokers.
	// Default DefaultMaxBufferedRecords, 10,000.
	MaxBufferedRecords int
	// Conn are the franz-go options that reach and authenticate to the
	// cluster (client id, TLS, SASL: sources/kafka.Config.ConnOpts). Default
	// none: plaintext, no authentication. The sink applies them first, then
	// its own, which win: the seed brokers (Brokers), idempotence with
	// acks=all, the manual partitioner, the batch size limit (invariant 8),
	// linger, MaxBufferedRecords and, in transactional mode, the
	// transactional id and the request versions invariant 5 relies on.
	Conn []kgo.Opt
}

// Sink is the Kafka sink.
type Sink struct {
	cfg        Config
	cl         *kgo.Client
	batchBytes atomic.Int32 // the producer's record batch limit (invariant 8)
	partitions int32
	deadline   time.Time // Open's

	mu      sync.Mutex
	prodErr error       // first produce error since the last Flush
	acked   atomic.Bool // a record of the open transaction was acknowledged
	promise func(*kgo.Record, error)
	spares  chan *msgSlab // slabs whose records the producer is done with
	slabs   int           // slabs made

	inTxn    bool
	txnSlabs []*msgSlab  // records of the open transaction, for re-production after an abort
	produced int         // records produced in the open transaction
	offsets  *txnOffsets // set once the open transaction holds offsets
	resend   bool
	err      error

	// member is the group membership of the last Claim, sent with the
	// offsets so the coordinator fences a stale member (invariant 9);
	// fenced is set when it did, until the next Claim. Claim is called
	// from the engine goroutine: mmu guards both.
	mmu    sync.Mutex
	member *record.GroupMember
	fenced bool
}

// New returns a sink; call Open before use.
func New(cfg Config) *Sink {
	cfg.EnsureDefaults()
	s := &Sink{cfg: cfg, spares: make(chan *msgSlab, spareSlabs)}
	s.batchBytes.Store(DefaultBatchBytes)
	s.promise = func(r *kgo.Record, err error) {
		if err != nil {
			s.mu.Lock()
			if s.prodErr == nil {
				s.prodErr = err
			}
			s.mu.Unlock()
		} else if !s.acked.Load() {
			s.acked.Store(true)
		}
		if sl, ok := r.Context.(*msgSlab); ok && sl.left.Add(-1) == 0 && !sl.held {
			select {
			case s.spares <- sl:
			default:
			}
		}
	}
	return s
}

// clientOpts returns the producer's options: the connection's, then the
// ones the invariants rely on.
func (s *Sink) clientOpts() []kgo.Opt {
	opts := append(s.cfg.Conn[:len(s.cfg.Conn):len(s.cfg.Conn)],
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is kgo's default, and needs all acks
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytesFn(func(string) int32 { return s.batchBytes.Load() }),
		kgo.ProducerLinger(0), // send at once; batches form while requests are in flight
		kgo.MaxBufferedRecords(s.cfg.MaxBufferedRecords),
		kgo.RecordRetries(10),
	)
	if s.cfg.TransactionalID != "" {
		opts = append(opts, kgo.TransactionalID(s.cfg.TransactionalID), kgo.MaxVersions(classicTxnVersions()))
	}
	return opts
}

// classicTxnVersions caps the requests whose newer versions change the
// transaction protocol (KIP-890 part 2: partitions added implicitly, the
// producer epoch bumped at each EndTxn). The sink adds its offsets to the
// producer's transaction itself (AddOffsetsToTxn, TxnOffsetCommit with the
// source group's membership, EndTxn when nothing was produced), which is
// only consistent with the producer's state when no EndTxn changes the
// epoch behind its back.
func classicTxnVersions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	v.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), 3)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	return v
}

// Info describes the sink a configuration makes (signalbox.SinkDescriber).
// It is "kafka" and produces keys and values as their original bytes
// (schema'd ones keep their wire format and schema id), so the engine need
// not render them for it. It is exactly once only with a TransactionalID
// and a GroupID: its transaction then stores the checkpoint with the
// group's offsets (invariant 5), so signalbox does not commit them through
// the source, which would overwrite that checkpoint. Otherwise it is an
// at-least-once sink: signalbox flushes it like any other and never calls
// Restore, FlushCheckpoint or Claim.
func (c Config) Info() record.SinkInfo {
	txn := c.TransactionalID != "" && c.GroupID != ""
	return record.SinkInfo{Name: "kafka", ExactlyOnce: txn, CommitsSourceOffsets: txn, BytesOnly: true}
}

// Info is the sink's description: its configuration's (Config.Info).
func (s *Sink) Info() record.SinkInfo { return s.cfg.Info() }

// Open connects and starts the producer. Connecting, the topic's metadata
// and limits and the producer's initialisation share one deadline:
// StartupTimeout from now, or the start-up deadline ctx carries
// (internal/startup) when that is earlier. A broker that does not answer in time fails Open with
// ErrStartupTimeout, naming the brokers.
func (s *Sink) Open(ctx context.Context) error {
	if len(s.cfg.Brokers) == 0 || s.cfg.Topic == "" {
		return errors.New("kafka: Brokers and Topic are required")
	}
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	s.deadline, _ = startup.Deadline(ctx, cmp.Or(s.cfg.StartupTimeout, DefaultStartupTimeout))
	var auth authWatch
	cl, err := kgo.NewClient(append(s.clientOpts(), kgo.WithHooks(&auth))...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	octx, cancel := context.WithDeadline(ctx, s.deadline)
	defer cancel()
	err = s.bounded(ctx, "connecting and initialising the producer", func() error { return s.open(octx, cl) })
	if err != nil {
		cancel()
		go cl.Close() // the step ends with octx
		if aerr := auth.err.Load(); aerr != nil {
			return fmt.Errorf("kafka: authenticating to %s failed (SASL: check the mechanism, user and password): %w", aerr.broker, err)
		}
		return err
	}
	s.cl = cl
	return nil
}

// authWatch records the first failed SASL exchange, so that Open names
// the cause when a broker refuses the credentials by closing the
// connection.
type authWatch struct{ err atomic.Pointer[authErr] }

type authErr struct{ broker string }

func (a *authWatch) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	var timeout net.Error
	if err != nil && (key == int16(kmsg.SASLAuthenticate) || key == int16(kmsg.SASLHandshake)) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &timeout) && timeout.Timeout()) {
		a.err.CompareAndSwap(nil, &authErr{net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))})
	}
}

// bounded runs a blocking start-up step (what) within the start-up
// deadline.
func (s *Sink) bounded(ctx context.Context, what string, step func() error) error {
	err := startup.Run(ctx, s.deadline, step)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = ErrStartupTimeout // the step's own deadline is the start-up deadline
	}
	if errors.Is(err, ErrStartupTimeout) {
		return fmt.Errorf("kafka: %w: no answer from brokers %s within the start-up deadline (startup_timeout %v) while %s",
			ErrStartupTimeout, strings.Join(s.cfg.Brokers, ", "), cmp.Or(s.cfg.StartupTimeout, DefaultStartupTimeout), what)
	}
	return err
}

// open reads the topic's partitions and limits and initialises the
// producer id (transactional: fencing any earlier instance).
func (s *Sink) open(ctx context.Context, cl *kgo.Client) error {
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, s.cfg.Topic)
	if err != nil {
		return retry.Retryable(fmt.Errorf("kafka: %w", err))
	}
	td, ok := tds[s.cfg.Topic]
	if !ok || td.Err != nil || len(td.Partitions) == 0 {
		return fmt.Errorf("kafka: output topic %q: %v", s.cfg.Topic, cmp.Or(td.Err, errors.New("no partitions")))
	}
	s.partitions = int32(len(td.Partitions))
	// The topic's own limit may be lower than the producer's: a batch over
	// it would fail (and, in transactional mode, the transaction).
	if limit, ok := topicMaxMessageBytes(ctx, adm, s.cfg.Topic); ok && limit < DefaultBatchBytes {
		s.batchBytes.Store(int32(limit))
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("kafka: initialising the producer id: %w", err)
	}
	return nil
}

// recordBatchOverhead is what kgo counts for a record batch beyond its
// records (the batch header, its log overhead and the records array length):
// a record is refused when this plus its own length exceeds the limit.
const recordBatchOverhead = 65

// topicMaxMessageBytes returns the topic's max.message.bytes, when the
// cluster tells (DescribeConfigs may be denied; the producer's limit then
// stands).
func topicMaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int, bool) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, false
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			if n, err := strconv.Atoi(*c.Value); err == nil && n > recordBatchOverhead {
				return n, true
			}
		}
	}
	return 0, false
}

// Partition returns the output partition of r among n partitions
// (invariant 3).
func Partition(r *record.Record, n int32) int32 {
	if len(r.OrderKey) > 0 {
		return int32(murmur2(r.OrderKey)&0x7fffffff) % n
	}
	if len(r.Key) > 0 {
		return int32(murmur2(r.Key)&0x7fffffff) % n
	}
	return 0
}

// murmur2 is the Java client's hash (org.apache.kafka.common.utils.Utils),
// of a string or bytes alike (no copy of the key).
func murmur2[T string | []byte](data T) uint32 {
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

// Claim records the group membership under which partitions were
// assigned: the next transactions send it with their offsets (invariant 9).
// A membership of another group than Config.GroupID is ignored.
func (s *Sink) Claim(_ context.Context, member *record.GroupMember, _ []record.TopicPartition) error {
	s.mmu.Lock()
	defer s.mmu.Unlock()
	s.fenced = false
	if member == nil || member.Group != s.cfg.GroupID {
		s.member = nil
		return nil
	}
	m := *member
	s.member = &m
	return nil
}

// membership returns the membership of the last Claim and whether the
// coordinator fenced it.
func (s *Sink) membership() (*record.GroupMember, bool) {
	s.mmu.Lock()
	defer s.mmu.Unlock()
	return s.member, s.fenced
}

// Write produces batch (asynchronously; Flush waits for the acks). While the
// sink is fenced (invariant 9) it drops batch: the partitions are another
// member's, which re-reads them from the last committed offsets.
func (s *Sink) Write(ctx context.Context, batch []record.Record) error {
	if err := s.ready(); err != nil {
		return err
	}
	if _, fenced := s.membership(); fenced {
		return nil
	}
	if err := s.oversized(batch); err != nil {
		return err
	}
	if err := s.begin(); err != nil { // re-produces an aborted transaction first
		return err
	}
	s.produce(ctx, batch)
	return nil
}

// begin opens a transaction if none is open and re-produces an aborted one.
func (s *Sink) begin() error {
	if s.cfg.TransactionalID == "" || s.inTxn {
		return nil
	}
	if err := s.cl.BeginTransaction(); err != nil {
		s.err = fmt.Errorf("kafka: %w", err)
		return s.err
	}
	s.inTxn, s.produced, s.offsets = true, 0, nil
	s.acked.Store(false) // every promise of the previous transaction has run
	if s.resend {
		s.resend = false
		s.reproduce()
	}
	return nil
}

// oversized rejects, before anything of batch is produced, the records
// the producer or the topic would refuse as too large (invariant 8):
// produced, such a record would fail the producer, and the transaction.
func (s *Sink) oversized(batch []record.Record) error {
	limit := int(s.batchBytes.Load())
	var rej []retry.Rejection
	for i := range batch {
		if r := &batch[i]; len(r.Headers) == 0 && !r.Late && len(r.Key)+len(r.Value)+maxRecordOverhead <= limit {
			continue // fits whatever the varints' lengths
		}
		if n := batchSize(&batch[i]); n > limit {
			rej = append(rej, retry.Rejection{Record: batch[i],
				Reason: fmt.Sprintf("kafka: record of %d bytes exceeds the %d bytes a batch of %s can hold (max.message.bytes)", n, limit, s.cfg.Topic)})
		}
	}
	return retry.Rejected(rej...)
}

// maxRecordOverhead bounds what a record without headers adds to its key
// and value in a batch of its own (batchSize): the batch overhead, its
// attributes and at most 5 bytes for each of its varints.
const maxRecordOverhead = recordBatchOverhead + 8*5

// batchSize is the size kgo counts for a batch holding only r (Kafka's
// record format v2): the batch overhead and r's length-prefixed record.
func batchSize(r *record.Record) int {
	tsDelta, offsetDelta := 1, 1 // varint zeroes: r is the batch's first record
	headers := len(r.Headers)
	if r.Late {
		headers++
	}
	l := 1 + tsDelta + offsetDelta + bytesLen(r.Key) + bytesLen(r.Value) + varintLen(headers)
	for _, h := range r.Headers {
		l += varintLen(len(h.Key)) + len(h.Key) + bytesLen(h.Value)
	}
	if r.Late {
		v := len(strconv.AppendInt(nil, r.LateBy, 10))
		l += varintLen(len(record.LateByHeader)) + len(record.LateByHeader) + varintLen(v) + v
	}
	return recordBatchOverhead + varintLen(l) + l
}

// bytesLen is the encoded size of a nullable byte field.
func bytesLen(b []byte) int {
	if b == nil {
		return 1 // length -1
	}
	return varintLen(len(b)) + len(b)
}

// varintLen is the size of n as a zig-zag varint.
func varintLen(n int) int {
	u := uint64(n) << 1
	l := 1
	for ; u >= 0x80; u >>= 7 {
		l++
	}
	return l
}

// message fills msg, the output record of r.
func message(msg *kgo.Record, r *record.Record, topic string, partition int32) {
	*msg = kgo.Record{Topic: topic, Partition: partition, Key: r.Key, Value: r.Value}
	if len(r.Headers) > 0 || r.Late {
		msg.Headers = make([]kgo.RecordHeader, len(r.Headers), len(r.Headers)+1)
		for i, h := range r.Headers {
			msg.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
		if r.Late {
			msg.Headers = append(msg.Headers, kgo.RecordHeader{Key: record.LateByHeader, Value: strconv.AppendInt(nil, r.LateBy, 10)})
		}
	}
	if !r.Timeless && r.EventTime > 0 {
		msg.Timestamp = timeOf(r.EventTime)
	}
}

// spareSlabs is how many slabs of output records the sink keeps for reuse.
const spareSlabs = 16

// msgSlab holds the output records of one produce call. It is each
// record's Context (never cancelled: the Produce context carries the
// Write's), so the promise finds it; once the producer has finished with
// the last of them (each record's promise ran), it is reused. In
// transactional mode it is held instead: its records are the open
// transaction's, re-produced after an abort, and it is reused once the
// transaction ends.
type msgSlab struct {
	context.Context
	msgs []kgo.Record
	left atomic.Int64 // records whose promise has not run
	held bool         // kept for the open transaction
}

// slab returns a slab of n records: a spare when one fits without wasting
// more than 3n, else a new one.
func (s *Sink) slab(n int) *msgSlab {
	select {
	case sl := <-s.spares:
		if c := cap(sl.msgs); c >= n && c <= 4*n {
			sl.msgs = sl.msgs[:n]
			return sl
		}
	default:
	}
	s.slabs++
	return &msgSlab{Context: context.Background(), msgs: make([]kgo.Record, n)}
}

// produce hands batch to the producer, in order.
func (s *Sink) produce(ctx context.Context, batch []record.Record) {
	if len(batch) == 0 {
		return
	}
	sl := s.slab(len(batch))
	sl.left.Store(int64(len(batch)))
	if sl.held = s.cfg.TransactionalID != ""; sl.held {
		s.txnSlabs = append(s.txnSlabs, sl)
	}
	for i := range batch {
		msg := &sl.msgs[i]
		message(msg, &batch[i], s.cfg.Topic, Partition(&batch[i], s.partitions))
		msg.Context = sl
		s.cl.Produce(ctx, msg, s.promise)
	}
	s.produced += len(batch)
}

// reproduce produces the records of the aborted transaction again, in
// order. Every promise of theirs has run (the abort waited for it), so
// the producer may take them again.
func (s *Sink) reproduce() {
	for _, sl := range s.txnSlabs {
		sl.left.Store(int64(len(sl.msgs)))
		for i := range sl.msgs {
			m := &sl.msgs[i]
			*m = kgo.Record{Topic: m.Topic, Partition: m.Partition, Key: m.Key, Value: m.Value, Headers: m.Headers, Timestamp: m.Timestamp, Context: sl}
			s.cl.Produce(context.Background(), m, s.promise)
		}
		s.produced += len(sl.msgs)
	}
}

// releaseTxn gives the slabs of the transaction that ended (committed, or
// aborted for good) back for reuse: every promise of theirs has run.
func (s *Sink) releaseTxn() {
	for i, sl := range s.txnSlabs {
		select {
		case s.spares <- sl:
		default:
		}
		s.txnSlabs[i] = nil
	}
	s.txnSlabs = s.txnSlabs[:0]
}

// Flush waits for every acknowledgement and, in transactional mode, commits.
func (s *Sink) Flush(ctx context.Context) error {
	return s.flush(ctx, nil)
}

// FlushCheckpoint commits the written records and cp's Low offsets for
// Config.GroupID in one transaction (invariant 5).
func (s *Sink) FlushCheckpoint(ctx context.Context, cp record.Checkpoint) error {
	if !s.cfg.Info().ExactlyOnce {
		return s.flush(ctx, nil) // no transaction with a group to store cp in: a plain flush
	}
	return s.flush(ctx, &cp)
}

func (s *Sink) flush(ctx context.Context, cp *record.Checkpoint) error {
	if err := s.ready(); err != nil {
		return err
	}
	member, fenced := s.membership()
	if fenced {
		if cp == nil {
			return nil
		}
		return retry.Fenced(errors.New("kafka: the group coordinator fenced this member's generation"), partitions(cp)...)
	}
	if s.resend || (cp != nil && !s.inTxn) {
		if err := s.begin(); err != nil {
			return err
		}
	}
	if err := s.wait(ctx); err != nil {
		if s.cfg.TransactionalID != "" {
			return s.txnFailure(ctx, err)
		}
		s.err = fmt.Errorf("kafka: %w", err)
		return s.err
	}
	if !s.inTxn {
		return nil
	}
	if cp != nil {
		if err := s.addOffsets(ctx, cp, member); err != nil {
			if member != nil && groupFenced(err) {
				return s.fence(ctx, err, cp)
			}
			return s.txnFailure(ctx, err)
		}
	}
	if err := s.commit(ctx); err != nil {
		return s.txnFailure(ctx, err)
	}
	s.inTxn, s.offsets = false, nil
	s.releaseTxn()
	return nil
}

// wait blocks until every produced record is acknowledged.
func (s *Sink) wait(ctx context.Context) error {
	if err := s.cl.Flush(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.prodErr
	s.prodErr = nil
	return err
}

func partitions(cp *record.Checkpoint) []record.TopicPartition {
	out := make([]record.TopicPartition, len(cp.Partitions))
	for i, p := range cp.Partitions {
		out[i] = p.TopicPartition
	}
	return out
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
	if s.cl != nil {
		if err == nil && s.cfg.TransactionalID == "" {
			err = s.Flush(context.Background())
		}
		if s.inTxn {
			actx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.cfg.StartupTimeout, DefaultStartupTimeout))
			aerr := s.abort(actx)
			cancel()
			if aerr != nil {
				// The broker aborts it at the transaction timeout, or when
				// the next instance with this TransactionalID starts.
				err = errors.Join(err, fmt.Errorf("kafka: aborting the open transaction: %w", aerr))
			}
			s.inTxn = false
		}
		s.cl.Close()
	}
	s.err = ErrClosed
	return err
}

func (s *Sink) ready() error {
	if s.err != nil {
		return s.err
	}
	if s.cl == nil {
		return errors.New("kafka: sink not open")
	}
	return nil
}
