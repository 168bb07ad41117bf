package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	// counts are the partition counts the current subscription was joined
	// with; a discovery round that finds others makes the member rejoin.
	counts     map[string]int
	rejoinCh   chan struct{} // closed to end the session; nil between sessions
	wantRejoin bool          // a change seen before the session's Setup
	// unsent are revoked partitions whose Revoked Poll did not take within
	// RevokeTimeout; the next Setup delivers it before its Assigned.
	unsent []record.TopicPartition
	// ready is closed while a session is recorded (sess != nil): a commit
	// made between two sessions waits on it.
	ready chan struct{}
}

func (s *Source) openGroup(ctx context.Context, sc *sarama.Config) error {
	sc.Consumer.Fetch.Default = 1 << 10 // sarama's own consumers are paused; keep what they read small
	// Reach the cluster, authenticate and find the coordinator before
	// joining: a wrong address or password fails Open with its cause
	// instead of a session that rejoins forever.
	start := time.Now()
	counts, err := s.openGroupTopics(ctx)
	if err != nil {
		return err
	}
	cg, err := sarama.NewConsumerGroupFromClient(s.cfg.Group, s.client)
	if err != nil {
		return fmt.Errorf("kafka: group %s: %w", s.cfg.Group, err)
	}
	g := &groupState{s: s, cg: cg, done: make(chan struct{}), counts: counts, ready: make(chan struct{})}
	s.group = g
	s.markDiscovered(start)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for err := range cg.Errors() {
			s.log.Debug("consumer group", zap.Error(err))
		}
	}()
	s.watchStartup(sc.Consumer.Group.Rebalance.Timeout)
	go g.loop()
	if s.discoveryEnabled() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.discoverLoop(g.round)
		}()
	}
	return nil
}

// warnUnequalPartitions logs when the topics have different partition
// counts. Tasks are partition numbers: a task p beyond a topic's count
// lacks that topic, and its records are ordered among themselves only.
// Range assignment may also place partition p of two topics on different
// members, and a key hashes to another partition once its topic grew, so
// order across topics then holds per instance and task, not per key.
func (s *Source) warnUnequalPartitions(counts map[string]int) {
	first := -1
	for _, n := range counts {
		if first >= 0 && n != first {
			s.log.Warn("topics have different partition counts: tasks beyond a topic's count lack it, a consumer group may place partition p of two topics on different members, and keys are no longer co-partitioned across topics; order across topics then holds per instance and task, not per key",
				zap.Any("partitions", counts))
			return
		}
		first = n
	}
}

// loop keeps the member in the group until the source closes. Each
// session subscribes to the topics that exist, as last counted.
func (g *groupState) loop() {
	defer close(g.done)
	backoff := g.s.cfg.RetryBackoff
	counts := g.joinCounts()
	for g.s.ctx.Err() == nil {
		var err error
		if len(counts) == 0 {
			err = errors.New("no topic to read yet")
		} else {
			g.s.warnUnequalPartitions(counts)
			err = g.cg.Consume(g.s.ctx, slices.Sorted(maps.Keys(counts)), g)
		}
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
		c, err := g.s.topicCounts()
		if err != nil {
			g.s.log.Warn("listing topics before rejoining failed", zap.Error(err))
			select {
			case <-time.After(backoff):
			case <-g.s.ctx.Done():
				return
			}
			continue
		}
		counts = c
		g.mu.Lock()
		g.counts, g.wantRejoin = c, false
		g.mu.Unlock()
	}
}

func (g *groupState) joinCounts() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.counts
}

// round is a discovery round in group mode: when the topics read or their
// partition counts changed, the member rejoins, so that the group assigns
// the new partitions; the evidence clock stays capped until then.
func (g *groupState) round(counts map[string]int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if maps.Equal(counts, g.counts) {
		return true
	}
	grown, gone := diff(g.counts, counts)
	if len(gone) > 0 {
		g.s.log.Warn("topics deleted: their partitions are revoked", zap.Strings("topics", gone))
	}
	if !g.wantRejoin {
		g.s.log.Info("partitions discovered: rejoining the group", zap.Strings("topics", grown))
	}
	g.wantRejoin = true
	if g.rejoinCh != nil {
		close(g.rejoinCh)
		g.rejoinCh = nil
	}
	return false
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
	g.s.joinedAtStartup()
	g.s.log.Info("partitions assigned", zap.Int("count", len(tps)), zap.Int32("generation", sess.GenerationID()))
	g.mu.Lock()
	g.rejoinCh = make(chan struct{})
	if g.wantRejoin {
		close(g.rejoinCh) // the topics changed while joining
	}
	unsent := g.unsent
	g.unsent = nil
	// The session is this member's from now on: commits made meanwhile
	// (the caller's checkpoint for an undelivered revoke among them) go to
	// it, for the partitions it owns in it.
	g.record(sess, tps)
	g.mu.Unlock()
	if len(unsent) > 0 { // invariant 5: the caller learns of the revoke first
		select {
		case g.s.out <- item{fetch: record.Fetch{Revoked: unsent}}:
		case <-sess.Context().Done():
			g.mu.Lock()
			g.unsent = append(unsent, g.unsent...)
			g.mu.Unlock()
			return sess.Context().Err()
		}
	}
	if len(tps) == 0 {
		if !g.s.assignedAtStartup() {
			return ErrStartupTimeout
		}
		g.set(sess, nil, nil, nil, nil)
		return nil
	}
	committed, cps, err := g.s.committed(tps)
	if err != nil {
		return err
	}
	infos, err := g.s.snapshotNew(tps, committed, cps)
	if err != nil {
		return err
	}
	if !g.s.assignedAtStartup() {
		return ErrStartupTimeout
	}
	select {
	case g.s.out <- item{fetch: record.Fetch{Assigned: infos, Member: member(g.s.cfg, sess)}}:
	case <-sess.Context().Done():
		return sess.Context().Err()
	}
	// StartAt positions are for the first assignment only: a partition
	// assigned again, or first assigned later, starts at the group's
	// committed offset, newer than the positions restored at start.
	g.s.startAt = nil
	ctx, stop := context.WithCancel(g.s.ctx)
	wg := new(sync.WaitGroup)
	g.set(sess, stop, wg, g.s.startFetchers(ctx, infos, wg), tps)
	return nil
}

// member is the membership of sess, sent with its Assigned partitions.
func member(cfg Config, sess sarama.ConsumerGroupSession) *record.GroupMember {
	return &record.GroupMember{Group: cfg.Group, Generation: sess.GenerationID(), MemberID: sess.MemberID(), InstanceID: cfg.GroupInstanceID}
}

func (g *groupState) set(sess sarama.ConsumerGroupSession, stop context.CancelFunc, wg *sync.WaitGroup, fs []*fetcher, tps []record.TopicPartition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record(sess, tps)
	g.stop, g.wg, g.fetchers = stop, wg, fs
}

// record sets the session and the partitions it assigned, opening or
// closing ready. g.mu is held.
func (g *groupState) record(sess sarama.ConsumerGroupSession, tps []record.TopicPartition) {
	switch {
	case sess != nil && g.sess == nil:
		close(g.ready)
	case sess == nil && g.sess != nil:
		g.ready = make(chan struct{})
	}
	g.sess, g.owned = sess, tps
}

// session returns the current session and its partitions. Between two
// sessions it waits for the next one, up to RevokeTimeout: Setup records
// the session before it waits for the caller, so this never waits on a
// commit's own caller. It returns a nil session when none started in time.
func (g *groupState) session(ctx context.Context) (sarama.ConsumerGroupSession, []record.TopicPartition) {
	g.mu.Lock()
	sess, owned, ready := g.sess, g.owned, g.ready
	g.mu.Unlock()
	if sess != nil {
		return sess, owned
	}
	t := time.NewTimer(g.s.cfg.RevokeTimeout)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	case <-g.s.ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sess, g.owned
}

// ConsumeClaim pauses sarama's consumer of the claim and holds the claim
// until the session ends; the source's fetchers do the reading.
// A claim that returns ends the session: that is how a discovery round
// makes the member rejoin.
func (g *groupState) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	g.cg.Pause(map[string][]int32{claim.Topic(): {claim.Partition()}})
	g.mu.Lock()
	rejoin := g.rejoinCh
	g.mu.Unlock()
	if rejoin == nil {
		return nil // the topics changed before the claim started
	}
	select {
	case <-sess.Context().Done():
	case <-rejoin:
	}
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
		g.s.log.Warn("revoke not taken by Poll in time; it is delivered before the next assignment")
		g.mu.Lock()
		g.unsent = append(g.unsent, tps...)
		g.mu.Unlock()
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
// generation, each with its metadata in meta (nil: none); between two
// sessions, in the next one (session). Offsets of
// partitions it does not own (or all of them, when no session started in
// time) are skipped, and reported in a *record.CommitSkippedError: their
// owner re-reads from the last commit.
func (g *groupState) commit(ctx context.Context, offsets map[record.TopicPartition]int64, meta map[record.TopicPartition]string) error {
	sess, owned := g.session(ctx)
	var skipped []record.TopicPartition
	for tp := range offsets {
		if _, found := slices.BinarySearchFunc(owned, tp, compareTP); !found || sess == nil {
			skipped = append(skipped, tp)
		}
	}
	slices.SortFunc(skipped, compareTP)
	if sess == nil {
		return &record.CommitSkippedError{Partitions: skipped, Reason: "no group session started within RevokeTimeout"}
	}
	if err := g.commitOwned(sess, owned, offsets, meta); err != nil {
		return err
	}
	if len(skipped) > 0 {
		return &record.CommitSkippedError{Partitions: skipped, Reason: "the partitions are not assigned to this member in generation " + strconv.Itoa(int(sess.GenerationID()))}
	}
	return nil
}

// commitOwned commits the offsets of the partitions in owned to sess's
// generation, with their metadata in meta.
func (g *groupState) commitOwned(sess sarama.ConsumerGroupSession, owned []record.TopicPartition, offsets map[record.TopicPartition]int64, meta map[record.TopicPartition]string) error {
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
			req.AddBlock(tp.Topic, tp.Partition, off, 0, meta[tp])
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
