package kafka

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const testInterval = 200 * time.Millisecond

// No group: a partition added while the source runs is assigned from its
// log start (Start is "latest": the partition was created after Open) and
// read completely. No Fetch handed over before its Assigned certifies time
// more than one interval past the partition's creation (invariant 9).
func TestDiscoverNewPartition(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("a", 2))
	mustProduce(t, c, recs("a", 0, 3, "old")...)
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"a"}, Start: StartLatest, DiscoveryInterval: testInterval})
	col := newCollector(t, src)
	col.until("caught up", col.caughtUp)

	if err := c.CreatePartitions(bg, "a", 3); err != nil {
		t.Fatal(err)
	}
	created := time.Now() // the partition exists since before this instant
	mustProduce(t, c, recs("a", 2, 5, "new")...)
	tp := record.TopicPartition{Topic: "a", Partition: 2}
	ctx, cancel := context.WithTimeout(bg, hangGuard)
	defer cancel()
	for {
		f, err := src.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if limit := created.Add(testInterval); f.At.After(limit) {
			t.Fatalf("a Fetch before the new partition's Assigned certifies %v, more than an interval after its creation (%v)", f.At, created)
		}
		if slices.ContainsFunc(f.Assigned, func(a record.PartitionInfo) bool { return a.TopicPartition == tp }) {
			col.assigned[tp] = f.Assigned[0]
			col.pos[tp] = f.Assigned[0].Start
			break
		}
	}
	if a := col.assigned[tp]; a.Start != 0 {
		t.Fatalf("new partition assigned %+v, want Start 0 (its log start)", a)
	}
	col.until("new partition read", func() bool { return len(col.values[tp]) == 5 })
	if got := col.values[tp]; !slices.Equal(got, []string{"new0", "new1", "new2", "new3", "new4"}) {
		t.Fatalf("new partition read %q", got)
	}
}

// A topic created to match a pattern is assigned and read completely; a
// topic that does not match is not; a deleted topic is revoked with a
// warning, once, and not fetched again.
func TestDiscoverPatternAndDeletedTopic(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("ev-1", 1), embedded.WithTopic("other", 1))
	mustProduce(t, c, recs("ev-1", 0, 2, "one")...)
	core, logs := observer.New(zapcore.WarnLevel)
	col := newCollector(t, openSource(t, Config{Brokers: c.Addrs(), TopicPatterns: []string{"ev-.*"},
		DiscoveryInterval: testInterval, Logger: zap.New(core)}))
	col.until("caught up", col.caughtUp)
	if len(col.assigned) != 1 {
		t.Fatalf("assigned %v, want ev-1/0 only", col.assigned)
	}
	if err := c.CreateTopic(bg, "ev-2", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic(bg, "nomatch", 1); err != nil {
		t.Fatal(err)
	}
	mustProduce(t, c, recs("ev-2", 0, 4, "two")...)
	mustProduce(t, c, recs("ev-2", 1, 3, "two")...)
	mustProduce(t, c, recs("nomatch", 0, 1, "x")...)
	ev20, ev21 := record.TopicPartition{Topic: "ev-2", Partition: 0}, record.TopicPartition{Topic: "ev-2", Partition: 1}
	col.until("ev-2 read", func() bool { return len(col.values[ev20]) == 4 && len(col.values[ev21]) == 3 })
	for tp := range col.assigned {
		if !strings.HasPrefix(tp.Topic, "ev-") {
			t.Fatalf("%v assigned: it matches no pattern", tp)
		}
	}

	if err := c.DeleteTopic(bg, "ev-1"); err != nil {
		t.Fatal(err)
	}
	ev1 := record.TopicPartition{Topic: "ev-1", Partition: 0}
	col.until("ev-1 revoked", func() bool { return slices.Contains(col.revoked, ev1) })
	if logs.FilterMessageSnippet("topics deleted").Len() != 1 {
		t.Fatalf("deleted topic warnings: %d, want 1", logs.FilterMessageSnippet("topics deleted").Len())
	}
	n := len(col.fetches)
	col.pollFor(5 * testInterval)
	for _, pf := range col.fetches[n:] {
		if pf.TopicPartition == ev1 {
			t.Fatalf("revoked partition still fetched: %+v", pf)
		}
	}
}

// Group mode: a partition added while the member runs makes it rejoin; the
// new partition is assigned from its log start and read completely.
func TestGroupDiscoversNewPartition(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("a", 2), embedded.WithTopic("b", 2))
	mustProduce(t, c, recs("a", 0, 3, "old")...)
	col := newCollector(t, openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"a", "b"}, Group: "disc",
		DiscoveryInterval: testInterval}))
	col.until("caught up", func() bool { return len(col.assigned) == 4 && col.caughtUp() })
	if err := c.CreatePartitions(bg, "a", 3); err != nil {
		t.Fatal(err)
	}
	mustProduce(t, c, recs("a", 2, 5, "new")...)
	tp := record.TopicPartition{Topic: "a", Partition: 2}
	col.until("new partition read", func() bool { return len(col.values[tp]) == 5 })
	if a := col.assigned[tp]; a.Start != 0 {
		t.Fatalf("new partition assigned %+v, want Start 0", a)
	}
	if len(col.assigned) != 5 {
		t.Fatalf("assigned %v, want all 5 partitions", col.assigned)
	}
}

// The start-up log line of the patterns lists the topics that match them,
// not the topics named beside them.
func TestPatternLogListsMatchingTopics(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("ev-1", 1), embedded.WithTopic("named", 1), embedded.WithTopic("other", 1))
	core, logs := observer.New(zapcore.InfoLevel)
	openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"named"}, TopicPatterns: []string{"ev-.*"}, Logger: zap.New(core)})
	lines := logs.FilterMessage("topics matching the patterns").All()
	if len(lines) != 1 {
		t.Fatalf("%d lines listing the topics matching the patterns, want 1", len(lines))
	}
	got, _ := lines[0].ContextMap()["topics"].([]any)
	if len(got) != 1 || got[0] != "ev-1" {
		t.Fatalf("topics matching the patterns: %v, want [ev-1]", lines[0].ContextMap()["topics"])
	}
}

// A named topic that does not exist fails Open, naming it, and suggests
// the pattern that would wait for it (written to match the name only).
func TestMissingTopicSuggestsPattern(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("orders", 1))
	for _, cfg := range []Config{
		{Brokers: c.Addrs(), Topics: []string{"orders", "returns.v1"}},
		{Brokers: c.Addrs(), Topics: []string{"orders", "returns.v1"}, Group: "g"},
	} {
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, hangGuard)
		err = s.Open(ctx)
		cancel()
		if err == nil {
			_ = s.Close()
			t.Fatalf("group %q: Open succeeded without the topic", cfg.Group)
		}
		if msg := err.Error(); !errors.Is(err, kerr.UnknownTopicOrPartition) ||
			!strings.Contains(msg, "topic returns.v1") || !strings.Contains(msg, `topic_pattern: 'returns\.v1'`) {
			t.Fatalf("group %q: error %q, want the missing topic named and topic_pattern suggested", cfg.Group, msg)
		}
	}
}

// Group mode start-up fails, with the cause, when the cluster cannot be
// reached or refuses the credentials; it does not rejoin forever.
func TestGroupOpenFailsWithCause(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("auth", 1), embedded.WithUser(SASLScramSHA256, "alice", "s3cret"))
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unreachable", Config{Brokers: []string{"127.0.0.1:1"}}, "connection refused"},
		{"wrong password", Config{Brokers: c.Addrs(), SASL: SASL{Mechanism: SASLScramSHA256, User: "alice", Password: "wrong"}}, "SASL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Topics, tc.cfg.Group = []string{"auth"}, "g"
			s, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, hangGuard)
			defer cancel()
			err = s.Open(ctx)
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name the cause (%q)", err, tc.want)
			}
		})
	}
}

// While discovery rounds fail (here: the broker answers every metadata
// request with LEADER_NOT_AVAILABLE, while fetches keep succeeding), the
// evidence clock stops one interval after the last completed round: a
// failing search holds the watermark, it never advances it. It resumes
// once rounds succeed again.
func TestDiscoveryFailureHoldsEvidence(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("a", 1))
	mustProduce(t, c, recs("a", 0, 3, "v")...)
	core, logs := observer.New(zapcore.WarnLevel)
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"a"}, DiscoveryInterval: testInterval, Logger: zap.New(core)})
	col := newCollector(t, src)
	col.until("caught up", col.caughtUp)

	var blocked atomic.Bool
	blocked.Store(true)
	kf := c.Kfake()
	kf.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if !blocked.Load() {
			return nil, nil, false
		}
		req := kreq.(*kmsg.MetadataRequest)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = rt.Topic, kerr.LeaderNotAvailable.Code
			resp.Topics = append(resp.Topics, mt)
		}
		return resp, nil, true
	})
	blockedAt := time.Now()
	maxAt := func(d time.Duration) time.Time {
		ctx, cancel := context.WithTimeout(bg, d)
		defer cancel()
		var at time.Time
		for {
			f, err := src.Poll(ctx)
			if err != nil {
				return at
			}
			if f.At.After(at) {
				at = f.At
			}
		}
	}
	if at := maxAt(6 * testInterval); at.After(blockedAt.Add(testInterval)) {
		t.Fatalf("discovery failing since %v, yet a Fetch certifies %v", blockedAt, at)
	}
	if logs.FilterMessageSnippet("partition discovery failed").Len() != 1 {
		t.Fatalf("want one warning for the failing discovery, got %d", logs.FilterMessageSnippet("partition discovery failed").Len())
	}
	blocked.Store(false)
	unblocked := time.Now()
	if at := maxAt(5 * testInterval); !at.After(unblocked) {
		t.Fatalf("evidence clock stuck at %v after discovery recovered at %v", at, unblocked)
	}
}
