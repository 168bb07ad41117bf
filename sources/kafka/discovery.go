package kafka

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/signalbox/signalbox/internal/topicpattern"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// discovery is the source's view of which topics and partitions exist
// (invariant 9). A round lists the configured topics and every topic
// matching a pattern with their partition counts; what is new is assigned
// (no group) or makes the member rejoin (group); what disappeared is
// revoked. done, the start of the last round that found nothing new, caps
// the evidence clock: a partition created after done is one the caller has
// not been told about, so no Fetch may certify time beyond done.
type discovery struct {
	patterns []*regexp.Regexp

	mu      sync.Mutex
	known   map[string]int // static: partitions assigned per topic
	initial map[string]int // partition counts at Open
	done    time.Time      // zero: discovery disabled, no cap
}

// compilePatterns compiles patterns Validate has checked.
func compilePatterns(patterns []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if re, err := topicpattern.Compile(p); err == nil {
			out = append(out, re)
		}
	}
	return out
}

// enabled reports whether rounds run and cap the evidence clock.
func (s *Source) discoveryEnabled() bool { return s.cfg.DiscoveryInterval > 0 }

// markDiscovered records a completed round that started at t.
func (s *Source) markDiscovered(t time.Time) {
	if !s.discoveryEnabled() {
		return
	}
	s.disc.mu.Lock()
	defer s.disc.mu.Unlock()
	if t.After(s.disc.done) {
		s.disc.done = t
	}
}

// discoveredAt is the cap on the evidence clock; zero when there is none.
func (s *Source) discoveredAt() time.Time {
	s.disc.mu.Lock()
	defer s.disc.mu.Unlock()
	return s.disc.done
}

// isNew reports whether tp was created after Open: it is read from the log
// start whatever Start says, since all of it was written while the job ran.
func (s *Source) isNew(tp record.TopicPartition) bool {
	s.disc.mu.Lock()
	defer s.disc.mu.Unlock()
	n, ok := s.disc.initial[tp.Topic]
	return s.disc.initial != nil && (!ok || int(tp.Partition) >= n)
}

// matches reports whether topic is read: named in Topics or matching a
// pattern. Internal topics match no pattern.
func (s *Source) matches(topic string) bool {
	return slices.Contains(s.cfg.Topics, topic) || s.matchesPattern(topic)
}

// matchesPattern reports whether topic matches one of TopicPatterns.
// Internal topics match none.
func (s *Source) matchesPattern(topic string) bool {
	if strings.HasPrefix(topic, "__") {
		return false
	}
	for _, re := range s.disc.patterns {
		if re.MatchString(topic) {
			return true
		}
	}
	return false
}

// topicCounts asks a broker for the partition count of every topic read.
// A configured topic that does not exist is absent from the result; so is
// a deleted one. It creates no topic.
func (s *Source) topicCounts() (map[string]int, error) {
	var names []string // nil asks for every topic: patterns need them all
	if len(s.disc.patterns) == 0 {
		names = s.cfg.Topics
	}
	resp, err := s.metadata(s.ctx, names)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		name, terr := *t.Topic, kerr.ErrorForCode(t.ErrorCode)
		switch {
		case !s.matches(name) || t.IsInternal || errors.Is(terr, kerr.UnknownTopicOrPartition):
		case terr != nil && len(t.Partitions) == 0:
			return nil, fmt.Errorf("kafka: metadata of %s: %w", name, terr)
		default:
			out[name] = len(t.Partitions)
		}
	}
	return out, nil
}

// openTopics resolves the topics at Open and records them as the initial
// set. A configured topic that does not exist fails Open (the error
// suggests a pattern, which would wait for it); a pattern that
// matches nothing yet is logged.
func (s *Source) openTopics() (map[string]int, error) {
	s.waitFor("a metadata request from brokers %s", s.brokerList())
	if err := s.probe(s.ctx); err != nil {
		return nil, err
	}
	counts, err := s.topicCounts()
	if err != nil {
		return nil, err
	}
	for _, t := range s.cfg.Topics {
		if _, ok := counts[t]; !ok {
			return nil, fmt.Errorf("kafka: topic %s: %w; to start without it and read it once it is created, "+
				"name it by a pattern instead (topic_pattern: '%s'; Config.TopicPatterns)", t, kerr.UnknownTopicOrPartition, regexp.QuoteMeta(t))
		}
	}
	if len(s.disc.patterns) > 0 {
		matching := slices.DeleteFunc(slices.Sorted(maps.Keys(counts)), func(t string) bool { return !s.matchesPattern(t) })
		s.log.Info("topics matching the patterns", zap.Strings("patterns", s.cfg.TopicPatterns), zap.Strings("topics", matching))
	}
	s.disc.mu.Lock()
	s.disc.initial = maps.Clone(counts)
	s.disc.mu.Unlock()
	return counts, nil
}

// partitionsOf lists tps for counts, partitions [from[t], counts[t]).
func partitionsOf(counts, from map[string]int) []record.TopicPartition {
	var tps []record.TopicPartition
	for _, t := range slices.Sorted(maps.Keys(counts)) {
		for p := from[t]; p < counts[t]; p++ {
			tps = append(tps, record.TopicPartition{Topic: t, Partition: int32(p)})
		}
	}
	return tps
}

// diff compares a round's counts with what was known: the topics that
// grew or appeared, and those that disappeared.
func diff(known, now map[string]int) (grown, gone []string) {
	for t, n := range now {
		if n > known[t] {
			grown = append(grown, t)
		}
	}
	for t := range known {
		if _, ok := now[t]; !ok {
			gone = append(gone, t)
		}
	}
	slices.Sort(grown)
	slices.Sort(gone)
	return grown, gone
}

// discoverLoop runs a round every DiscoveryInterval until the source
// closes. round does the mode's work and reports whether the round found
// the source's view complete; only then does the cap advance.
func (s *Source) discoverLoop(round func(counts map[string]int) bool) {
	t := time.NewTicker(s.cfg.DiscoveryInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		counts, err := s.topicCounts()
		if err != nil {
			if !failing {
				s.log.Warn("partition discovery failed; the watermark is held until it succeeds", zap.Error(err))
			}
			failing = true
			continue
		}
		failing = false
		if round(counts) {
			s.markDiscovered(start)
		}
	}
}

// staticRound assigns the partitions that appeared and revokes those of
// deleted topics (no group).
func (s *Source) staticRound(counts map[string]int) bool {
	s.disc.mu.Lock()
	known := maps.Clone(s.disc.known)
	s.disc.mu.Unlock()
	grown, gone := diff(known, counts)
	if len(gone) > 0 {
		s.log.Warn("topics deleted: their partitions are revoked, and their records still parked are dropped unemitted",
			zap.Strings("topics", gone))
		goneTPs := partitionsOf(pick(known, gone), nil)
		if !s.revokeStatic(goneTPs) {
			return false
		}
		s.disc.mu.Lock()
		for _, t := range gone {
			delete(s.disc.known, t)
		}
		s.disc.mu.Unlock()
	}
	if len(grown) == 0 {
		return true
	}
	tps := partitionsOf(pick(counts, grown), known)
	infos, err := s.snapshotNew(tps, nil, nil)
	if err != nil {
		s.log.Warn("snapshot of discovered partitions failed; retrying next round", zap.Error(err))
		return false
	}
	s.log.Info("partitions discovered", zap.Int("count", len(tps)), zap.Strings("topics", grown))
	// The cap may advance only once the caller has taken the Assigned:
	// a Fetch handed over before it must not certify time past it.
	ack := make(chan struct{})
	select {
	case s.out <- item{fetch: record.Fetch{Assigned: infos}, ack: ack}:
	case <-s.ctx.Done():
		return false
	}
	s.startFetchers(s.ctx, infos, &s.wg)
	select {
	case <-ack:
	case <-s.ctx.Done():
		return false
	}
	s.disc.mu.Lock()
	for _, t := range grown {
		s.disc.known[t] = counts[t]
	}
	s.disc.mu.Unlock()
	return true
}

func pick(counts map[string]int, topics []string) map[string]int {
	out := make(map[string]int, len(topics))
	for _, t := range topics {
		out[t] = counts[t]
	}
	return out
}

// snapshotNew snapshots tps; a partition created after Open without a
// committed offset starts at its log start (invariant 7).
func (s *Source) snapshotNew(tps []record.TopicPartition, committed map[record.TopicPartition]int64, cps map[record.TopicPartition]record.PartitionCheckpoint) ([]record.PartitionInfo, error) {
	var fresh []record.TopicPartition
	for _, tp := range tps {
		if c, ok := committed[tp]; (!ok || c < 0) && s.isNew(tp) {
			fresh = append(fresh, tp)
		}
	}
	if len(fresh) > 0 && s.cfg.Start != StartEarliest {
		starts, err := s.listOffsets(fresh, listEarliest)
		if err != nil {
			return nil, err
		}
		committed = maps.Clone(committed)
		if committed == nil {
			committed = make(map[record.TopicPartition]int64, len(starts))
		}
		maps.Copy(committed, starts)
	}
	return s.snapshot(tps, committed, cps)
}

// revokeStatic stops fetching tps, then reports them as Revoked.
func (s *Source) revokeStatic(tps []record.TopicPartition) bool {
	s.mu.Lock()
	fs := slices.Clone(s.fetchers)
	s.mu.Unlock()
	var emptied []*fetcher
	for _, f := range fs {
		select {
		case left := <-f.drop(tps):
			if left == 0 {
				emptied = append(emptied, f)
			}
		case <-s.ctx.Done():
			return false
		}
	}
	s.dropFetchers(emptied)
	select {
	case s.out <- item{fetch: record.Fetch{Revoked: tps}}:
		return true
	case <-s.ctx.Done():
		return false
	}
}
