package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// groupState runs group mode: a franz-go group client (kgo.ConsumerGroup)
// does membership and assignment, with the task balancer; the source's own
// fetchers read the assigned partitions. The group client fetches nothing:
// every topic it is assigned is paused in OnPartitionsAssigned, which
// franz-go runs before it starts consuming a partition.
type groupState struct {
	s  *Source
	cl *kgo.Client // the group member; commits go through it

	mu       sync.Mutex
	sess     *session
	stop     context.CancelFunc // the session's fetchers
	wg       *sync.WaitGroup
	fetchers []*fetcher
	owned    []record.TopicPartition
	// counts are the partition counts the member last joined with, taken
	// before the join (at Open, then at each revoke); a discovery round
	// that finds others makes the member rejoin. nil: unknown, taken at
	// the next assignment instead.
	counts map[string]int
	// unsent are revoked partitions whose Revoked Poll did not take within
	// RevokeTimeout; the next assignment delivers it before its Assigned.
	unsent []record.TopicPartition
	// ready is closed while a session is recorded (sess != nil): a commit
	// made between two sessions waits on it.
	ready chan struct{}
}

// session is one generation of this member's membership.
type session struct {
	memberID   string
	generation int32
}

func (s *Source) openGroup(ctx context.Context) error {
	// Reach the cluster, authenticate and find the coordinator before
	// joining: a wrong address or password fails Open with its cause
	// instead of a session that rejoins forever.
	start := time.Now()
	counts, err := s.openGroupTopics(ctx)
	if err != nil {
		return err
	}
	g := &groupState{s: s, counts: counts, ready: make(chan struct{})}
	topics := slices.Sorted(maps.Keys(counts))
	consume := []kgo.Opt{kgo.ConsumeTopics(topics...)}
	if len(s.disc.patterns) > 0 {
		// The configured topics and the patterns, as anchored regular
		// expressions: franz-go finds new matching topics itself.
		var res []string
		for _, t := range s.cfg.Topics {
			res = append(res, "^"+regexp.QuoteMeta(t)+"$")
		}
		for _, re := range s.disc.patterns {
			res = append(res, re.String())
		}
		consume = []kgo.Opt{kgo.ConsumeTopics(res...), kgo.ConsumeRegex()}
	}
	opts, err := s.clientOpts(append(consume,
		kgo.ConsumerGroup(s.cfg.Group),
		// The task balancer gives partition p of every topic to the same
		// member, whatever the partition counts: the co-partitioned tasks
		// signalbox orders within. Range (the same plan when the counts
		// are equal) is the fallback for members of older versions.
		// Tables go whole to every member (Config.Tables).
		kgo.Balancers(taskBalancer{global: s.cfg.Tables}, newRangeBalancer()),
		kgo.SessionTimeout(s.cfg.SessionTimeout),
		kgo.HeartbeatInterval(s.cfg.HeartbeatInterval),
		kgo.RebalanceTimeout(s.cfg.RebalanceTimeout),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(g.assigned),
		kgo.OnPartitionsRevoked(g.revoked),
		kgo.OnPartitionsLost(g.revoked),
		// The group leader's own check for grown topics runs at the
		// discovery interval too.
		kgo.MetadataMaxAge(max(s.cfg.DiscoveryInterval, MinDiscoveryInterval)),
		kgo.MetadataMinAge(min(max(s.cfg.DiscoveryInterval, MinDiscoveryInterval), 5*time.Second)),
	)...)
	if err != nil {
		return err
	}
	if s.cfg.GroupInstanceID != "" {
		opts = append(opts, kgo.InstanceID(s.cfg.GroupInstanceID))
	}
	s.group = g
	s.markDiscovered(start)
	s.watchStartup(s.cfg.RebalanceTimeout)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: group %s: %w", s.cfg.Group, err)
	}
	cl.PauseFetchTopics(topics...)
	g.mu.Lock()
	g.cl = cl
	g.mu.Unlock()
	if s.discoveryEnabled() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.discoverLoop(g.round)
		}()
	}
	return nil
}

// client is the group client; nil until openGroup made it.
func (g *groupState) client() *kgo.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cl
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

// round is a discovery round in group mode: when the topics read or their
// partition counts changed since the member joined, the member has the
// group rebalance (franz-go's leader, which checks its metadata at the
// discovery interval too, assigns the new partitions); the evidence clock
// stays capped until then.
func (g *groupState) round(counts map[string]int) bool {
	g.mu.Lock()
	known, cl := g.counts, g.cl
	g.mu.Unlock()
	if known != nil && maps.Equal(counts, known) {
		return true
	}
	if known != nil {
		grown, gone := diff(known, counts)
		if len(gone) > 0 {
			g.s.log.Warn("topics deleted: their partitions are revoked", zap.Strings("topics", gone))
		}
		g.s.log.Info("partitions discovered: rejoining the group", zap.Strings("topics", grown))
	}
	if cl != nil {
		cl.ForceMetadataRefresh()
		cl.ForceRebalance()
	}
	return false
}

// assigned (franz-go's OnPartitionsAssigned) records the session,
// snapshots the assigned partitions, reports them as Assigned, then starts
// fetching them (invariants 1, 5, 7, 11). franz-go calls it once per
// session, before it would consume any of them: it pauses them all first.
func (g *groupState) assigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	var tps []record.TopicPartition
	var topics []string
	for t, ps := range assigned {
		topics = append(topics, t)
		if !g.s.matches(t) {
			continue // an internal topic a pattern matched
		}
		for _, p := range ps {
			tps = append(tps, record.TopicPartition{Topic: t, Partition: p})
		}
	}
	cl.PauseFetchTopics(topics...) // before franz-go fetches any of them
	slices.SortFunc(tps, record.TopicPartition.Compare)
	g.s.joinedAtStartup()
	memberID, gen := cl.GroupMetadata()
	sess := &session{memberID: memberID, generation: gen}
	g.s.log.Info("partitions assigned", zap.Int("count", len(tps)), zap.Int32("generation", gen))
	g.mu.Lock()
	g.cl = cl // commits made as soon as Poll returns the Assigned use it
	if g.counts == nil {
		if c, err := g.s.topicCounts(); err == nil {
			g.counts = c
		}
	}
	counts := g.counts
	unsent := g.unsent
	g.unsent = nil
	// The session is this member's from now on: commits made meanwhile
	// (the caller's checkpoint for an undelivered revoke among them) go to
	// it, for the partitions it owns in it.
	g.record(sess, tps)
	g.mu.Unlock()
	g.s.warnUnequalPartitions(counts)
	if len(unsent) > 0 { // invariant 5: the caller learns of the revoke first
		select {
		case g.s.out <- item{fetch: record.Fetch{Revoked: unsent}}:
		case <-g.s.ctx.Done():
			return
		}
	}
	if len(tps) == 0 {
		if g.s.assignedAtStartup() {
			g.set(sess, nil, nil, nil, nil)
		}
		return
	}
	infos, ok := g.snapshot(cl, sess, tps)
	if !ok || !g.s.assignedAtStartup() {
		g.set(sess, nil, nil, nil, nil) // nothing delivered: nothing to revoke
		return
	}
	select {
	case g.s.out <- item{fetch: record.Fetch{Assigned: infos, Member: member(g.s.cfg, sess)}}:
	case <-g.s.ctx.Done():
		return
	}
	// StartAt positions are for the first assignment only: a partition
	// assigned again, or first assigned later, starts at the group's
	// committed offset, newer than the positions restored at start.
	g.s.startAt = nil
	ctx, stop := context.WithCancel(g.s.ctx)
	wg := new(sync.WaitGroup)
	g.set(sess, stop, wg, g.s.startFetchers(ctx, infos, wg), tps)
}

// snapshot takes the committed offsets and end snapshot of tps, retrying
// with backoff while they fail, until they succeed, the session is
// replaced or the source closes (false then).
func (g *groupState) snapshot(cl *kgo.Client, sess *session, tps []record.TopicPartition) ([]record.PartitionInfo, bool) {
	backoff := g.s.cfg.RetryBackoff
	for {
		committed, cps, err := g.s.committed(tps)
		if err == nil {
			var infos []record.PartitionInfo
			if infos, err = g.s.snapshotNew(tps, committed, cps); err == nil {
				return infos, true
			}
		}
		if g.s.boot.state.Load() != started {
			return nil, false // the start-up's watcher reports the failure
		}
		g.s.log.Warn("snapshot of assigned partitions failed; retrying", zap.Error(err))
		select {
		case <-time.After(backoff):
		case <-g.s.ctx.Done():
			return nil, false
		}
		backoff = min(2*backoff, 20*g.s.cfg.RetryBackoff)
		if _, gen := cl.GroupMetadata(); gen != sess.generation {
			return nil, false
		}
	}
}

// member is the membership of sess, sent with its Assigned partitions.
func member(cfg Config, sess *session) *record.GroupMember {
	return &record.GroupMember{Group: cfg.Group, Generation: sess.generation, MemberID: sess.memberID, InstanceID: cfg.GroupInstanceID}
}

func (g *groupState) set(sess *session, stop context.CancelFunc, wg *sync.WaitGroup, fs []*fetcher, tps []record.TopicPartition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.record(sess, tps)
	g.stop, g.wg, g.fetchers = stop, wg, fs
}

// record sets the session and the partitions it assigned, opening or
// closing ready. g.mu is held.
func (g *groupState) record(sess *session, tps []record.TopicPartition) {
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
func (g *groupState) session(ctx context.Context) (*session, []record.TopicPartition) {
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

// revoked (franz-go's OnPartitionsRevoked and OnPartitionsLost; every
// session of the eager task balancer ends in one, before the next join)
// stops the session's fetchers, reports the partitions as Revoked and
// waits (up to RevokeTimeout) for the caller to take that Fetch and come
// back, so that its commits land before the partitions move (invariant
// 6). Then it counts the topics' partitions the next join goes with.
func (g *groupState) revoked(context.Context, *kgo.Client, map[string][]int32) {
	g.cleanup()
	if g.s.ctx.Err() != nil {
		return // closing: there is no next join
	}
	counts, err := g.s.topicCounts()
	if err != nil {
		g.s.log.Warn("listing topics before rejoining failed", zap.Error(err))
		counts = nil // taken at the next assignment
	}
	g.mu.Lock()
	g.counts = counts
	g.mu.Unlock()
}

func (g *groupState) cleanup() {
	g.mu.Lock()
	stop, wg, fs, tps := g.stop, g.wg, g.fetchers, g.owned
	g.mu.Unlock()
	defer g.set(nil, nil, nil, nil, nil)
	if stop == nil {
		return
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
		return
	case <-timeout.C:
		g.s.log.Warn("revoke not taken by Poll in time; it is delivered before the next assignment")
		g.mu.Lock()
		g.unsent = append(g.unsent, tps...)
		g.mu.Unlock()
		return
	}
	select {
	case <-ack:
	case <-g.s.ctx.Done():
	case <-timeout.C:
		g.s.log.Warn("revoke not acknowledged in time; commits may be late")
	}
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
		if _, found := slices.BinarySearchFunc(owned, tp, record.TopicPartition.Compare); !found || sess == nil {
			skipped = append(skipped, tp)
		}
	}
	slices.SortFunc(skipped, record.TopicPartition.Compare)
	if sess == nil {
		return &record.CommitSkippedError{Partitions: skipped, Reason: "no group session started within RevokeTimeout"}
	}
	if err := g.commitOwned(ctx, sess, owned, offsets, meta); err != nil {
		return err
	}
	if len(skipped) > 0 {
		return &record.CommitSkippedError{Partitions: skipped, Reason: "the partitions are not assigned to this member in generation " + strconv.Itoa(int(sess.generation))}
	}
	return nil
}

// commitOwned commits the offsets of the partitions in owned to sess's
// generation, with their metadata in meta, by an OffsetCommitRequest
// through the group client (franz-go's CommitOffsets carries no metadata).
func (g *groupState) commitOwned(ctx context.Context, sess *session, owned []record.TopicPartition, offsets map[record.TopicPartition]int64, meta map[record.TopicPartition]string) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = g.s.cfg.Group
	req.Generation = sess.generation
	req.MemberID = sess.memberID
	if g.s.cfg.GroupInstanceID != "" {
		req.InstanceID = kmsg.StringPtr(g.s.cfg.GroupInstanceID)
	}
	req.RetentionTimeMillis = -1
	topicAt := make(map[string]int)
	for _, tp := range slices.SortedFunc(maps.Keys(offsets), record.TopicPartition.Compare) {
		if _, found := slices.BinarySearchFunc(owned, tp, record.TopicPartition.Compare); !found {
			continue
		}
		i := topicSlot(&req.Topics, topicAt, tp.Topic, func(name string) kmsg.OffsetCommitRequestTopic {
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = name
			return t
		})
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = tp.Partition, offsets[tp], -1
		if m, ok := meta[tp]; ok {
			p.Metadata = kmsg.StringPtr(m)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	if len(req.Topics) == 0 {
		return nil
	}
	cl := g.client()
	if cl == nil {
		return errors.New("kafka: commit: the group client is not open")
	}
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("kafka: commit: %w", err)
	}
	var errs []error
	for _, t := range kresp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("kafka: commit %s/%d: %w", t.Topic, p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (g *groupState) close() error {
	if cl := g.client(); cl != nil {
		cl.Close()
	}
	return nil
}
