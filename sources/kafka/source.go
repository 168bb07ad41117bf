package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signalbox/signalbox/internal/startup"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ErrClosed is returned by Poll after Close.
var ErrClosed = errors.New("kafka: source closed")

// Source reads Kafka topics through franz-go. See the package
// documentation for its invariants and lifecycle.
type Source struct {
	cfg  Config
	log  *zap.Logger
	cl   *kgo.Client // metadata, offsets and fetches
	meta brokers     // leaders and broker addresses, from metadata answers

	out   chan item  // fetchers and the group handler → Poll
	fatal chan error // background failures that end the pipeline

	ctx    context.Context // lives from Open to Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	paused   map[record.TopicPartition]struct{}
	fetchers []*fetcher

	// Static mode: the assignment, reported by the first Poll.
	static  []record.PartitionInfo
	started bool

	// Poll-goroutine state: the ack of a delivered assignment change, and
	// an item held back so that it is not mixed with data.
	ack        chan struct{}
	pending    item
	hasPending bool
	stash      stash // records of paused partitions kept back

	group *groupState // nil without Config.Group
	disc  discovery

	// startAt overrides start positions (Seeker) at the first assignment
	// after Open; set before Open, cleared once that assignment is made.
	startAt map[record.TopicPartition]int64
	// startTime is Config.Start resolved at Open when it names a time
	// (timed), in Unix milliseconds: a Kafka timestamp.
	startTime int64
	timed     bool

	// wanted is the engine's evidence demand (WantEvidence), in Unix
	// nanoseconds; 0 when nothing waits for evidence.
	wanted atomic.Int64

	// pool holds the record arrays the engine gave back (Recycle).
	pool recordPool
	// handled holds partitions back until their records are handled.
	handled handledGate

	boot startupState
	gate *logGate // closed when the start-up fails: abandoned steps log nothing
}

// minEvidenceWait is the shortest fetch wait an evidence demand can ask
// for: while a record is due, each fetcher sends at most one fetch every
// minEvidenceWait, so a demand cannot flood the broker.
const minEvidenceWait = 5 * time.Millisecond

// WantEvidence implements the root package's EvidenceDemander: while a
// parked record is due at at, fetches wait no longer than until at (and no
// less than minEvidenceWait), so the answer that certifies at comes right
// after it instead of after FetchMaxWait. A zero at withdraws the demand.
func (s *Source) WantEvidence(at time.Time) {
	if at.IsZero() {
		s.wanted.Store(0)
		return
	}
	s.wanted.Store(at.UnixNano())
}

// pausedWait is the longest a fetch waits while its fetcher has paused
// partitions: as short as an evidence demand may make it, so a fetcher
// still sends at most one fetch per minEvidenceWait. The engine resumes a
// partition the moment the watermark catches up with it, often the one that
// now holds the watermark; a fetcher cannot add it to a fetch it has sent,
// and the broker holds a fetch whose partitions have no data (caught up,
// say) for MaxWaitTime. With several brokers, one fetcher each, that wait
// would hold the whole replay back in steps of FetchMaxWait (figures:
// docs/bench.md, "Notes on the scaling figures", several brokers).
const pausedWait = minEvidenceWait

// fetchWait is the MaxWaitTime of the next fetch: FetchMaxWait, shortened
// by an evidence demand, and to pausedWait when paused is set (the fetcher
// has paused partitions).
func (s *Source) fetchWait(now time.Time, paused bool) time.Duration {
	w := s.cfg.FetchMaxWait
	if at := s.wanted.Load(); at != 0 {
		w = min(w, max(time.Unix(0, at).Sub(now), minEvidenceWait))
	}
	if paused {
		w = min(w, pausedWait)
	}
	return w
}

// StartAt makes the given partitions start at the given offsets instead of
// the group's committed offsets, in the first assignment after Open only
// (static mode: the partitions found at Open; group mode: the first
// generation that assigns this member any partition). It implements the
// root package's Seeker. Call it before Open.
func (s *Source) StartAt(offsets map[record.TopicPartition]int64) {
	s.startAt = maps.Clone(offsets)
}

// New checks cfg (after EnsureDefaults) and returns an unopened Source.
func New(cfg Config) (*Source, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	gate := new(logGate)
	s := &Source{
		gate:   gate,
		cfg:    cfg,
		log:    cfg.Logger.Named("kafka").WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return gatedCore{c, gate} })),
		out:    make(chan item, 1),
		fatal:  make(chan error, 1),
		paused: make(map[record.TopicPartition]struct{}),
		stash:  make(stash),
		disc:   discovery{patterns: compilePatterns(cfg.TopicPatterns)},
	}
	s.handled.wakeUp = s.pokeFetchers
	return s, nil
}

// Open connects and, in static mode, snapshots every partition's end offset
// and start position. It reads no record. In group mode it joins the group;
// assignments arrive through Poll. The whole start-up, to the first
// assignment in group mode, shares one deadline (Config.StartupTimeout).
func (s *Source) Open(ctx context.Context) error {
	opts, err := s.clientOpts()
	if err != nil {
		return err
	}
	s.log.Info("connecting", zap.Strings("brokers", s.cfg.Brokers), zap.Strings("topics", s.cfg.Topics),
		zap.Strings("topic_patterns", s.cfg.TopicPatterns), zap.Duration("discovery_interval", s.cfg.DiscoveryInterval),
		zap.String("group", s.cfg.Group), zap.String("isolation", s.cfg.Isolation),
		zap.Bool("tls", s.cfg.TLS.Enable), zap.String("sasl", s.cfg.SASL.Mechanism)) // never the password
	if t, ok, _ := ParseStart(s.cfg.Start, time.Now()); ok {
		// Once, so that every partition of the run, and every rebalance,
		// starts from the same instant.
		s.startTime, s.timed = max(t.UnixMilli(), 0), true
		s.log.Info("partitions without a committed offset start at a time", zap.Time("start", t))
	}
	s.boot.deadline, s.boot.carried = startup.Deadline(ctx, s.cfg.StartupTimeout)
	s.boot.left = time.Until(s.boot.deadline)
	s.boot.done, s.boot.joined = make(chan struct{}), make(chan struct{})
	s.waitFor("a connection to brokers %s", s.brokerList())
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return fmt.Errorf("kafka: connect: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.cfg.Group != "" {
		if err := s.openGroup(ctx); err != nil {
			s.closeClient()
			return err
		}
		return nil
	}
	start := time.Now()
	var infos []record.PartitionInfo
	var counts map[string]int
	err = s.bounded(ctx, func() (err error) {
		if counts, err = s.openTopics(); err != nil {
			return err
		}
		infos, err = s.snapshot(partitionsOf(counts, nil), nil, nil)
		return err
	})
	if err != nil {
		s.closeClient()
		return err
	}
	s.finishStartup(started)
	s.disc.known, s.static = counts, infos
	s.startAt = nil // the first assignment is made: a partition discovered later starts as Start says
	s.markDiscovered(start)
	return nil
}

func (s *Source) closeClient() {
	if s.cancel != nil {
		s.cancel()
	}
	if s.group != nil {
		_ = s.group.close()
	}
	s.cl.Close()
}

// startFetchers starts one fetcher per current leader of infos, on ctx,
// counted in wg.
func (s *Source) startFetchers(ctx context.Context, infos []record.PartitionInfo, wg *sync.WaitGroup) []*fetcher {
	byLeader := make(map[int32][]record.PartitionInfo)
	var ids []int32
	for _, in := range infos {
		id, err := s.leader(in.TopicPartition)
		if err != nil {
			id = -1
		}
		if _, ok := byLeader[id]; !ok {
			ids = append(ids, id)
		}
		byLeader[id] = append(byLeader[id], in)
	}
	slices.Sort(ids)
	fs := make([]*fetcher, 0, len(ids))
	for _, id := range ids {
		f := newFetcher(s, byLeader[id])
		fs = append(fs, f)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.run(ctx, s.out)
		}()
	}
	s.mu.Lock()
	s.fetchers = append(s.fetchers, fs...)
	s.mu.Unlock()
	return fs
}

// dropFetchers forgets stopped fetchers.
func (s *Source) dropFetchers(fs []*fetcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetchers = slices.DeleteFunc(s.fetchers, func(f *fetcher) bool { return slices.Contains(fs, f) })
}

// maxMerge bounds how many fetcher answers one Poll merges.
const maxMerge = 16

// item is what the fetchers and the group handler hand to Poll. ack, if
// set, is closed when the caller comes back for the next Poll (or Closes),
// i.e. once it has handled the Fetch.
type item struct {
	from  *fetcher  // the fetcher that answered, nil for assignment changes
	at    time.Time // when its answer was received
	fetch record.Fetch
	ack   chan struct{}
}

func (it item) changesAssignment() bool {
	return len(it.fetch.Assigned) > 0 || len(it.fetch.Revoked) > 0
}

// Poll returns the next Fetch. The first Fetch that mentions a partition
// lists it in Assigned (with its end snapshot) and carries no records; a
// Fetch that assigns or revokes never carries records.
func (s *Source) Poll(ctx context.Context) (record.Fetch, error) {
	s.releaseAck()
	if s.ctx == nil || s.ctx.Err() != nil {
		return record.Fetch{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return record.Fetch{}, err // before any select: a ready answer must not win over it
	}
	if s.group == nil && !s.started {
		s.started = true
		s.startFetchers(s.ctx, s.static, &s.wg)
		if s.discoveryEnabled() {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.discoverLoop(s.staticRound)
			}()
		}
		return record.Fetch{Assigned: slices.Clone(s.static)}, nil
	}
	it, ok := s.pending, s.hasPending
	s.hasPending = false
	switch {
	case ok:
	case len(s.stash) > 0 && len(s.stash.ready(s.pausedNow())) > 0:
		// Records kept back while their partition was paused are due: take
		// what is there, without waiting.
		select {
		case it = <-s.out:
		default:
		}
	default:
		select {
		case it = <-s.out:
		case err := <-s.fatal:
			return record.Fetch{}, err
		case <-ctx.Done():
			return record.Fetch{}, ctx.Err()
		case <-s.ctx.Done():
			return record.Fetch{}, ErrClosed
		}
	}
	if it.changesAssignment() {
		s.stash.revoke(it.fetch.Revoked)
		s.ack = it.ack
		return it.fetch, nil
	}
	f := it.fetch
	it.delivered()
merge:
	for range maxMerge - 1 {
		select {
		case next := <-s.out:
			if next.changesAssignment() {
				s.pending, s.hasPending = next, true // never mixed with data
				break merge
			}
			f.Partitions = append(f.Partitions, next.fetch.Partitions...)
			next.delivered()
		default:
			break merge
		}
	}
	if len(s.stash) > 0 || s.anyPaused() {
		s.stash.filter(&f, s.pausedNow()) // after the answers are taken: a Pause made meanwhile counts
	}
	f.At = s.evidenceClock()
	return f, nil
}

// delivered records that the answer behind it reached the caller.
func (it item) delivered() {
	if it.from != nil && it.at.After(it.from.delivered) {
		it.from.delivered = it.at
	}
}

// evidenceClock is record.Fetch.At: the oldest of the fetchers' last
// delivered answers. Every partition is fetched by exactly one fetcher, so
// each partition's state is complete up to at least this time. It never
// passes the start of the last completed discovery round plus one interval
// (invariant 9): a partition created since is found by the round that
// starts then, and when rounds fail the clock stops.
func (s *Source) evidenceClock() time.Time {
	capAt := s.discoveredAt()
	if !capAt.IsZero() {
		capAt = capAt.Add(s.cfg.DiscoveryInterval)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	for i, f := range s.fetchers {
		if i == 0 || f.delivered.Before(at) {
			at = f.delivered
		}
	}
	if !capAt.IsZero() && capAt.Before(at) {
		at = capAt
	}
	return at
}

func (s *Source) releaseAck() {
	if s.ack != nil {
		close(s.ack)
		s.ack = nil
	}
}

// Commit commits offsets to the group: for each partition, the offset a
// restart must re-read from. Without a group it does nothing.
func (s *Source) Commit(ctx context.Context, offsets map[record.TopicPartition]int64) error {
	if s.group == nil || len(offsets) == 0 {
		return nil
	}
	return s.group.commit(ctx, offsets, nil)
}

// CommitCheckpoint commits each partition's Low offset to the group, with
// the partition's checkpoint as the commit's metadata
// (sources.EncodeCheckpoint); an assignment hands it back in
// record.PartitionInfo.Checkpoint. It implements the root package's
// CheckpointCommitter. Without a group it does nothing.
func (s *Source) CommitCheckpoint(ctx context.Context, cp record.Checkpoint) error {
	if s.group == nil || len(cp.Partitions) == 0 {
		return nil
	}
	offsets := make(map[record.TopicPartition]int64, len(cp.Partitions))
	meta := make(map[record.TopicPartition]string, len(cp.Partitions))
	for _, pc := range cp.Partitions {
		offsets[pc.TopicPartition] = pc.Low
		meta[pc.TopicPartition] = sources.EncodeCheckpoint(pc)
	}
	return s.group.commit(ctx, offsets, meta)
}

// Pause stops fetching tps until Resume: no Poll after Pause returns records
// of tps until Resume. Records of tps already fetched but not yet delivered
// are kept back and delivered, in order, by the first Poll after Resume
// (invariant 12).
func (s *Source) Pause(tps ...record.TopicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tp := range tps {
		s.paused[tp] = struct{}{}
	}
}

// Resume restarts fetching tps.
func (s *Source) Resume(tps ...record.TopicPartition) {
	s.mu.Lock()
	for _, tp := range tps {
		delete(s.paused, tp)
	}
	s.mu.Unlock()
	s.pokeFetchers()
}

// pokeFetchers wakes the fetchers that wait for something to fetch.
func (s *Source) pokeFetchers() {
	s.mu.Lock()
	fs := slices.Clone(s.fetchers)
	s.mu.Unlock()
	for _, f := range fs {
		f.poke()
	}
}

// anyPaused reports whether some partition is paused.
func (s *Source) anyPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.paused) > 0
}

// pausedNow reports, for Poll's filtering, whether a partition is paused
// as of the call: one lock, not one per partition.
func (s *Source) pausedNow() func(record.TopicPartition) bool {
	s.mu.Lock()
	set := maps.Clone(s.paused)
	s.mu.Unlock()
	return func(tp record.TopicPartition) bool {
		_, ok := set[tp]
		return ok
	}
}

func (s *Source) isPaused(tp record.TopicPartition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.paused[tp]
	return ok
}

// Close stops every fetcher, leaves the group and disconnects.
func (s *Source) Close() error {
	if s.cancel == nil {
		return nil
	}
	s.releaseAck()
	s.cancel()
	if s.boot.state.Load() == startFailed {
		// A start-up that timed out may still wait on a broker (a
		// LeaveGroup to a coordinator that does not answer, say), so
		// the rest is closed in the background.
		go s.closeAll()
		return nil // Poll reported the failure
	}
	return s.closeAll()
}

// closeAll leaves the group, waits for the goroutines and disconnects.
func (s *Source) closeAll() error {
	var err error
	if s.group != nil {
		err = s.group.close()
	}
	s.wg.Wait()
	s.cl.Close()
	return err
}
