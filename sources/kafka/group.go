package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/signalbox/signalbox/record"
	"go.uber.org/zap"
)

// groupState runs group mode: sarama.ConsumerGroup does membership and
// assignment; the source's own fetchers read the claimed partitions.
// sarama's partition consumers are paused as soon as they start, so they
// fetch at most one small batch that nobody reads.
type groupState struct {
	s    *Source
	cg   sarama.ConsumerGroup
	done chan struct{}

	mu       sync.Mutex
	sess     sarama.ConsumerGroupSession
	stop     context.CancelFunc // the session's fetchers
	wg       *sync.WaitGroup
	fetchers []*fetcher
	owned    []record.TopicPartition
}

func (s *Source) openGroup(sc *sarama.Config) error {
	sc.Consumer.Fetch.Default = 1 << 10 // sarama's own consumers are paused; keep what they read small
	s.warnUnequalPartitions()
	cg, err := sarama.NewConsumerGroupFromClient(s.cfg.Group, s.client)
	if err != nil {
		return fmt.Errorf("kafka: group %s: %w", s.cfg.Group, err)
	}
	g := &groupState{s: s, cg: cg, done: make(chan struct{})}
	s.group = g
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for err := range cg.Errors() {
			s.log.Debug("consumer group", zap.Error(err))
		}
	}()
	go g.loop()
	return nil
}

// warnUnequalPartitions logs when the topics have different partition
// counts: range assignment then cannot give partition p of every topic to
// one member, and keys are no longer co-partitioned across topics.
func (s *Source) warnUnequalPartitions() {
	counts := map[string]int{}
	for _, t := range s.cfg.Topics {
		if ps, err := s.client.Partitions(t); err == nil {
			counts[t] = len(ps)
		}
	}
	first := -1
	for _, n := range counts {
		if first >= 0 && n != first {
			s.log.Warn("topics have different partition counts: a consumer group cannot co-partition them, so order across topics holds per instance, not per key",
				zap.Any("partitions", counts))
			return
		}
		first = n
	}
}

// loop keeps the member in the group until the source closes.
func (g *groupState) loop() {
	defer close(g.done)
	backoff := g.s.cfg.RetryBackoff
	for g.s.ctx.Err() == nil {
		err := g.cg.Consume(g.s.ctx, g.s.cfg.Topics, g)
		switch {
		case errors.Is(err, sarama.ErrClosedConsumerGroup) || g.s.ctx.Err() != nil:
			return
		case err != nil:
			g.s.log.Warn("consumer group session failed; rejoining", zap.Error(err))
			select {
			case <-time.After(backoff):
			case <-g.s.ctx.Done():
				return
			}
			backoff = min(2*backoff, 20*g.s.cfg.RetryBackoff)
		default:
			backoff = g.s.cfg.RetryBackoff
		}
	}
}

// Setup snapshots the claimed partitions, reports them as Assigned, then
// starts fetching them (invariants 1, 5, 7).
func (g *groupState) Setup(sess sarama.ConsumerGroupSession) error {
	var tps []record.TopicPartition
	for t, ps := range sess.Claims() {
		for _, p := range ps {
			tps = append(tps, record.TopicPartition{Topic: t, Partition: p})
		}
	}
	slices.SortFunc(tps, compareTP)
	g.s.log.Info("partitions assigned", zap.Int("count", len(tps)), zap.Int32("generation", sess.GenerationID()))
	if len(tps) == 0 {
		g.set(sess, nil, nil, nil, nil)
		return nil
	}
	committed, err := g.s.committed(tps)
	if err != nil {
		return err
	}
	infos, err := g.s.snapshot(tps, committed)
	if err != nil {
		return err
	}
	select {
	case g.s.out <- item{fetch: record.Fetch{Assigned: infos}}:
	case <-sess.Context().Done():
		return sess.Context().Err()
	}
	ctx, stop := context.WithCancel(g.s.ctx)
	wg := new(sync.WaitGroup)
	g.set(sess, stop, wg, g.s.startFetchers(ctx, infos, wg), tps)
	return nil
}

func (g *groupState) set(sess sarama.ConsumerGroupSession, stop context.CancelFunc, wg *sync.WaitGroup, fs []*fetcher, tps []record.TopicPartition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sess, g.stop, g.wg, g.fetchers, g.owned = sess, stop, wg, fs, tps
}

// ConsumeClaim pauses sarama's consumer of the claim and holds the claim
// until the session ends; the source's fetchers do the reading.
func (g *groupState) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	g.cg.Pause(map[string][]int32{claim.Topic(): {claim.Partition()}})
	<-sess.Context().Done()
	return nil
}

// Cleanup stops the session's fetchers, reports the partitions as Revoked
// and waits (up to RevokeTimeout) for the caller to take that Fetch and come
// back, so that its commits land before the partitions move (invariant 6).
func (g *groupState) Cleanup(sarama.ConsumerGroupSession) error {
	g.mu.Lock()
	stop, wg, fs, tps := g.stop, g.wg, g.fetchers, g.owned
	g.mu.Unlock()
	defer g.set(nil, nil, nil, nil, nil)
	if stop == nil {
		return nil
	}
	stop()
	wg.Wait()
	g.s.dropFetchers(fs)
	g.s.log.Info("partitions revoked", zap.Int("count", len(tps)))
	ack := make(chan struct{})
	timeout := time.NewTimer(g.s.cfg.RevokeTimeout)
	defer timeout.Stop()
	select {
	case g.s.out <- item{fetch: record.Fetch{Revoked: tps}, ack: ack}:
	case <-g.s.ctx.Done():
		return nil
	case <-timeout.C:
		g.s.log.Warn("revoke not taken by Poll in time")
		return nil
	}
	select {
	case <-ack:
	case <-g.s.ctx.Done():
	case <-timeout.C:
		g.s.log.Warn("revoke not acknowledged in time; commits may be late")
	}
	return nil
}

// commit commits offsets of partitions this member owns in the current
// generation. Offsets of partitions it does not own are skipped: their new
// owner re-reads from the last commit.
func (g *groupState) commit(_ context.Context, offsets map[record.TopicPartition]int64) error {
	g.mu.Lock()
	sess, owned := g.sess, g.owned
	g.mu.Unlock()
	if sess == nil {
		g.s.log.Debug("commit outside a group session skipped")
		return nil
	}
	coord, err := g.s.client.Coordinator(g.s.cfg.Group)
	if err != nil {
		return fmt.Errorf("kafka: commit: coordinator: %w", err)
	}
	req := &sarama.OffsetCommitRequest{
		Version:                 2,
		ConsumerGroup:           g.s.cfg.Group,
		ConsumerGroupGeneration: sess.GenerationID(),
		ConsumerID:              sess.MemberID(),
		RetentionTime:           -1,
	}
	n := 0
	for tp, off := range offsets {
		if _, found := slices.BinarySearchFunc(owned, tp, compareTP); found {
			req.AddBlock(tp.Topic, tp.Partition, off, 0, "")
			n++
		}
	}
	if n == 0 {
		return nil
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		_ = g.s.client.RefreshCoordinator(g.s.cfg.Group)
		return fmt.Errorf("kafka: commit: %w", err)
	}
	var errs []error
	for t, ps := range resp.Errors {
		for p, kerr := range ps {
			if !errors.Is(kerr, sarama.ErrNoError) {
				errs = append(errs, fmt.Errorf("kafka: commit %s/%d: %w", t, p, kerr))
			}
		}
	}
	return errors.Join(errs...)
}

func (g *groupState) close() error {
	err := g.cg.Close()
	<-g.done
	return err
}

func compareTP(a, b record.TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}
