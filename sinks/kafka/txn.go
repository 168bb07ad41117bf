package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
)

// txnOffsets is the producer id and epoch under which the open transaction
// holds the group's offsets (AddOffsetsToTxn succeeded).
type txnOffsets struct {
	id    int64
	epoch int16
}

// addOffsets adds cp's Low offsets for Config.GroupID to the open
// transaction (AddOffsetsToTxn, then TxnOffsetCommit with member's
// membership so the coordinator fences a stale generation: invariant 9).
func (s *Sink) addOffsets(ctx context.Context, cp *record.Checkpoint, member *record.GroupMember) error {
	id, epoch, err := s.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	if s.offsets == nil {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = s.cfg.TransactionalID, id, epoch, s.cfg.GroupID
		err := concurrently(ctx, func() error {
			resp, err := add.RequestWith(ctx, s.cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.ErrorCode)
		})
		if err != nil {
			return fmt.Errorf("adding the offsets of %s to the transaction: %w", s.cfg.GroupID, err)
		}
		s.offsets = &txnOffsets{id, epoch}
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = s.cfg.TransactionalID, s.cfg.GroupID, id, epoch
	req.Generation = -1
	if member != nil {
		req.Generation, req.MemberID = member.Generation, member.MemberID
		if member.InstanceID != "" {
			iid := member.InstanceID
			req.InstanceID = &iid
		}
	}
	req.Topics = offsets(cp)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return fmt.Errorf("committing the offsets of %s in the transaction: %w", s.cfg.GroupID, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("committing the offset of %s/%d for %s in the transaction: %w", t.Topic, p.Partition, s.cfg.GroupID, err)
			}
		}
	}
	return nil
}

// concurrently runs a transaction request, again while the coordinator
// still completes the previous transaction (CONCURRENT_TRANSACTIONS).
func concurrently(ctx context.Context, req func() error) error {
	backoff := 10 * time.Millisecond
	for tries := 1; ; tries++ {
		err := req()
		if !errors.Is(err, kerr.ConcurrentTransactions) || tries == 30 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// commit commits the open transaction. kgo ends it when it produced into
// it; a transaction holding offsets only is the sink's, which ends it.
func (s *Sink) commit(ctx context.Context) error {
	if err := s.published(ctx); err != nil {
		return err
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return err
	}
	if s.offsets != nil && s.produced == 0 {
		return s.endTxn(ctx, true)
	}
	return nil
}

// abort aborts the open transaction and drops the records kgo still holds.
func (s *Sink) abort(ctx context.Context) error {
	if err := s.cl.AbortBufferedRecords(ctx); err != nil {
		return err
	}
	if err := s.published(ctx); err != nil {
		return err
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return err
	}
	if s.offsets == nil {
		return nil
	}
	// When kgo did not end it (nothing produced), the offsets' transaction
	// is still open; otherwise a second abort is answered as a retry.
	// A producer id kgo re-initialised has aborted it already.
	if id, epoch, err := s.cl.ProducerID(ctx); err != nil || id != s.offsets.id || epoch != s.offsets.epoch {
		return err
	}
	return s.endTxn(ctx, false)
}

// published waits, once a record of the open transaction was acknowledged,
// until the producer has published the output topic's partitions. On a
// topic's first metadata, kgo hands the waiting records to their
// partitions before it publishes the partitions; EndTransaction ends only a
// transaction whose partitions it finds published, and before that returns
// nil without ending it (franz-go v1.22.3): the broker then keeps the
// transaction open, and read_committed readers stalled, until its timeout
// aborts the acknowledged records. An acknowledged record was handed over,
// so the publication follows at once.
func (s *Sink) published(ctx context.Context) error {
	if !s.acked.Load() {
		return nil
	}
	for {
		// (-1, -1, nil) is a partition the producer has not published.
		if leader, epoch, err := s.cl.PartitionLeader(s.cfg.Topic, 0); leader != -1 || epoch != -1 || err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// endTxn ends the transaction the sink's offsets opened.
func (s *Sink) endTxn(ctx context.Context, commit bool) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = s.cfg.TransactionalID, s.offsets.id, s.offsets.epoch, commit
	return concurrently(ctx, func() error {
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
}

// groupFenced reports whether err is the group coordinator refusing the
// transaction's offsets because the member's generation is over.
func groupFenced(err error) bool {
	return errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.UnknownMemberID) ||
		errors.Is(err, kerr.FencedInstanceID)
}

// fence applies invariant 9: the transaction is aborted and its records
// dropped, never re-produced; the sink drops what it is given until the
// next Claim.
func (s *Sink) fence(ctx context.Context, err error, cp *record.Checkpoint) error {
	if aerr := s.abort(ctx); aerr != nil {
		s.err = fmt.Errorf("kafka: aborting a fenced transaction: %w (fenced by: %v)", aerr, err)
		return s.err
	}
	s.inTxn, s.resend, s.offsets = false, false, nil
	s.releaseTxn()
	s.mmu.Lock()
	s.fenced = true
	s.mmu.Unlock()
	return retry.Fenced(fmt.Errorf("kafka: transaction aborted: %w", err), partitions(cp)...)
}

// fatalTxn reports whether err ends the producer, not only the
// transaction: a newer instance fenced it, it may not use its
// transactional id, or the caller gave up waiting for acknowledgements
// (records may still be in flight).
func fatalTxn(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// txnFailure applies invariant 6.
func (s *Sink) txnFailure(ctx context.Context, err error) error {
	if s.inTxn && !fatalTxn(err) {
		if aerr := s.abort(ctx); aerr == nil {
			s.inTxn, s.offsets, s.resend = false, nil, len(s.txnSlabs) > 0
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

func offsets(cp *record.Checkpoint) []kmsg.TxnOffsetCommitRequestTopic {
	var out []kmsg.TxnOffsetCommitRequestTopic
	at := map[string]int{} // topic → index in out
	for _, p := range cp.Partitions {
		b, _ := json.Marshal(metadata{V: 1, Position: p.Position, End: p.End, Replaying: p.Replaying, Watermark: p.Watermark})
		md := string(b)
		i, ok := at[p.Topic]
		if !ok {
			i, at[p.Topic] = len(out), len(out)
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = p.Topic
			out = append(out, t)
		}
		op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.Partition, p.Low, -1, &md
		out[i].Partitions = append(out[i].Partitions, op)
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
	resp, err := kadm.NewClient(s.cl).FetchOffsets(ctx, s.cfg.GroupID)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, retry.Retryable(fmt.Errorf("kafka: fetching offsets of %s: %w", s.cfg.GroupID, err))
	}
	cp := &record.Checkpoint{Watermark: math.MaxInt64}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.At < 0 {
			return
		}
		pc := record.PartitionCheckpoint{TopicPartition: record.TopicPartition{Topic: o.Topic, Partition: o.Partition},
			Low: o.At, Position: o.At, End: -1, Watermark: math.MinInt64}
		var md metadata
		if json.Unmarshal([]byte(o.Metadata), &md) == nil && md.V == 1 {
			pc.Position, pc.End, pc.Replaying, pc.Watermark = md.Position, md.End, md.Replaying, md.Watermark
		}
		cp.Watermark = min(cp.Watermark, pc.Watermark)
		cp.Partitions = append(cp.Partitions, pc)
	})
	if len(cp.Partitions) == 0 {
		return nil, nil
	}
	sortPartitions(cp.Partitions)
	return cp, nil
}
