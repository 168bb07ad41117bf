package kafka

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signalbox/signalbox/embedded"
	"github.com/signalbox/signalbox/record"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Group mode: a restart starts from the committed offsets; when
// DeleteRecords moved the log start past the committed offset, the source
// logs it and continues from the log start.
func TestGroupRestartAndDeleteRecords(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("g", 1))
	mustProduce(t, c, recs("g", 0, 10, "v")...)
	tp := record.TopicPartition{Topic: "g", Partition: 0}
	cfg := Config{Brokers: c.Addrs(), Topics: []string{"g"}, Group: "grp"}

	first := openSource(t, cfg)
	col := newCollector(t, first)
	col.until("caught up", col.caughtUp)
	if a := col.assigned[tp]; a.Start != 0 || a.End != 10 {
		t.Fatalf("first run assigned %+v, want Start 0 End 10", a)
	}
	if err := first.Commit(bg, map[record.TopicPartition]int64{tp: 4}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: the committed offset is the start position.
	col2 := openAssigned(t, 1, cfg)
	second := col2.src
	if a := col2.assigned[tp]; a.Start != 4 || a.End != 10 {
		t.Fatalf("restart assigned %+v, want Start 4 (committed) End 10", a)
	}
	col2.until("caught up", col2.caughtUp)
	if got := col2.values[tp]; !slices.Equal(got, []string{"v4", "v5", "v6", "v7", "v8", "v9"}) {
		t.Fatalf("restart read %q", got)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}

	// DeleteRecords past the committed offset.
	if start, err := c.DeleteRecords(bg, "g", 0, 7); err != nil || start != 7 {
		t.Fatalf("DeleteRecords: start %d, %v", start, err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	cfg.Logger = zap.New(core)
	col3 := newCollector(t, openSource(t, cfg))
	col3.until("caught up after DeleteRecords", col3.caughtUp)
	if a := col3.assigned[tp]; a.Start != 4 {
		t.Fatalf("assigned %+v, want Start 4 (the committed offset)", a)
	}
	if got := col3.values[tp]; !slices.Equal(got, []string{"v7", "v8", "v9"}) {
		t.Fatalf("after DeleteRecords read %q, want v7..v9", got)
	}
	if logs.FilterMessageSnippet("outside the partition's log").Len() == 0 {
		t.Fatal("the jump to the log start was not logged")
	}
}

// A member that crashes (its connections drop, it never leaves the group)
// is expired by the session timeout; the other member takes its partitions
// over from the crashed member's committed offsets and reads them to the
// end: nothing is lost. Static membership (GroupInstanceID) does not keep a
// dead member's partitions beyond the session timeout either.
func TestGroupCrashedMemberTakenOver(t *testing.T) {
	t.Parallel()
	for _, static := range []bool{false, true} {
		t.Run(map[bool]string{false: "dynamic", true: "static"}[static], func(t *testing.T) {
			t.Parallel()
			c := startCluster(t, embedded.WithTopic("a", 2), embedded.WithTopic("b", 2),
				embedded.WithKfakeOptions(kfake.GroupMinSessionTimeout(100*time.Millisecond)))
			for _, topic := range []string{"a", "b"} {
				for p := range int32(2) {
					mustProduce(t, c, recs(topic, p, 10, "h")...)
				}
			}
			cfg := func(id string) Config {
				cfg := Config{Brokers: c.Addrs(), Topics: []string{"a", "b"}, Group: "crash",
					SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, ClientID: id}
				if static {
					cfg.GroupInstanceID = id
				}
				return cfg
			}
			a := openSource(t, cfg("member-a"))
			colA := newCollector(t, a)
			colA.until("A assigned everything", func() bool { return len(colA.assigned) == 4 && colA.caughtUp() })
			var stopA atomic.Bool
			waitA := background(colA, stopA.Load) // as A's engine would, so the rebalance proceeds
			b := openSource(t, cfg("member-b"))
			colB := newCollector(t, b)
			colB.until("B assigned half", func() bool { return len(colB.assigned) == 2 })
			waitOwned(t, a, 2)
			var ofA []record.TopicPartition
			for _, p := range []int32{0, 1} {
				for _, topic := range []string{"a", "b"} {
					tp := record.TopicPartition{Topic: topic, Partition: p}
					if _, ok := colB.assigned[tp]; !ok {
						ofA = append(ofA, tp)
					}
				}
			}
			if len(ofA) != 2 || ofA[0].Partition != ofA[1].Partition {
				t.Fatalf("A kept %v: not one whole task", ofA)
			}
			// A commits offset 4 of its partitions, then crashes.
			commits := map[record.TopicPartition]int64{ofA[0]: 4, ofA[1]: 4}
			if err := a.Commit(bg, commits); err != nil {
				t.Fatal(err)
			}
			// The crash: A stops, and no LeaveGroup reaches the group.
			stopA.Store(true)
			waitA()
			c.Kfake().ControlKey(int16(kmsg.LeaveGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.Kfake().KeepControl()
				return req.ResponseKind(), nil, true
			})
			_ = a.Close()
			crashed := time.Now()
			colB.until("B takes A's partitions over", func() bool {
				return len(colB.assigned) == 4 && colB.caughtUp()
			})
			t.Logf("taken over %v after the crash (session timeout 1s)", time.Since(crashed).Round(10*time.Millisecond))
			for _, tp := range ofA {
				if got := colB.assigned[tp].Start; got != 4 {
					t.Errorf("%v: B starts at %d, want A's committed 4", tp, got)
				}
				if n := len(colB.values[tp]); n < 6 {
					t.Errorf("%v: B read %d records from offset 4, want 6", tp, n)
				}
			}
		})
	}
}

// Static membership: a member that restarts within the session timeout
// gets its partitions back, and the other member is not rebalanced.
func TestStaticMemberRestartKeepsOthers(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("a", 2))
	cfg := func(id string) Config {
		return Config{Brokers: c.Addrs(), Topics: []string{"a"}, Group: "static", GroupInstanceID: id, ClientID: id}
	}
	a := openSource(t, cfg("static-a"))
	colA := newCollector(t, a)
	colA.until("A assigned", func() bool { return len(colA.assigned) == 2 })
	var stopA atomic.Bool
	waitA := background(colA, stopA.Load)
	b := openSource(t, cfg("static-b"))
	colB := newCollector(t, b)
	colB.until("B assigned", func() bool { return len(colB.assigned) == 1 })
	var stopB atomic.Bool
	waitB := background(colB, stopB.Load)
	stopA.Store(true)
	waitA()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	colA2 := newCollector(t, openSource(t, cfg("static-a")))
	colA2.until("restarted A assigned", func() bool { return len(colA2.assigned) > 0 })
	time.Sleep(time.Second) // B keeps polling: a rebalance would reach it now
	stopB.Store(true)
	waitB()
	if len(colA2.assigned) != 1 {
		t.Fatalf("restarted A assigned %v, want its one partition back", colA2.assigned)
	}
	if len(colB.revoked) > 0 {
		t.Fatalf("B was rebalanced (revoked %v) by a static member's restart", colB.revoked)
	}
}

// A rebalance while the caller does not poll (a slow engine) gives up
// waiting after RevokeTimeout, but the Revoked is not lost: it comes before
// the next Assigned (invariant 5), so the caller never keeps a partition
// that moved.
func TestRevokeNotTakenInTimeIsDeliveredLater(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("a", 2))
	cfg := func(id string) Config {
		return Config{Brokers: c.Addrs(), Topics: []string{"a"}, Group: "slow", ClientID: id, RevokeTimeout: 200 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond}
	}
	colA := newCollector(t, openSource(t, cfg("slow-a")))
	colA.until("A assigned", func() bool { return len(colA.assigned) == 2 })
	// A stops polling; B joins.
	colB := newCollector(t, openSource(t, cfg("slow-b")))
	var stopB atomic.Bool
	waitB := background(colB, stopB.Load)
	defer func() { stopB.Store(true); waitB() }()
	time.Sleep(time.Second) // A's revoke times out meanwhile
	colA.until("A's new assignment", func() bool { return len(colA.revoked) > 0 && len(colA.assigned) == 1 })
}

// A commit made as soon as Poll hands over an assignment belongs to the
// session that assigned it: it is committed, never skipped. (A session
// recorded only once the fetchers start would drop a commit made in between,
// a window a loaded machine widens.)
func TestCommitRightAfterAssignment(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("a", 1))
	mustProduce(t, c, recs("a", 0, 5, "v")...)
	tp := record.TopicPartition{Topic: "a", Partition: 0}
	for i := range 5 {
		group := "after-assignment-" + strconv.Itoa(i)
		src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"a"}, Group: group})
		ctx, cancel := context.WithTimeout(bg, hangGuard)
		for {
			f, err := src.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Assigned) > 0 {
				if f.Member == nil || f.Member.Group != group || f.Member.Generation <= 0 || f.Member.MemberID == "" {
					t.Fatalf("assignment without its membership: %+v", f.Member)
				}
				break
			}
		}
		cancel()
		if err := src.Commit(bg, map[record.TopicPartition]int64{tp: 3}); err != nil {
			t.Fatalf("run %d: Commit right after the assignment: %v", i, err)
		}
		if got := committedOffsets(t, c, group)[tp]; got != 3 {
			t.Fatalf("run %d: committed %d, want 3", i, got)
		}
		_ = src.Close()
	}
}

// A commit made before the first session (as between two) waits for it and
// commits what it assigned; a partition it did not assign is skipped, and
// reported so.
func TestCommitBetweenSessionsGoesToTheNext(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("b", 1))
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"b"}, Group: "between"})
	mine, other := record.TopicPartition{Topic: "b", Partition: 0}, record.TopicPartition{Topic: "other", Partition: 0}
	err := src.Commit(bg, map[record.TopicPartition]int64{mine: 1, other: 2})
	var skip *record.CommitSkippedError
	if !errors.As(err, &skip) || !errors.Is(err, record.ErrCommitSkipped) || !slices.Equal(skip.Partitions, []record.TopicPartition{other}) {
		t.Fatalf("Commit = %v, want %v reported skipped", err, other)
	}
	held := committedOffsets(t, c, "between")
	if held[mine] != 1 {
		t.Fatalf("committed %v, want %v at 1", held, mine)
	}
	if _, ok := held[other]; ok {
		t.Fatalf("a skipped commit reached Kafka: %v", held)
	}
}

func committedOffsets(t *testing.T, c *embedded.Cluster, group string) map[record.TopicPartition]int64 {
	t.Helper()
	cl, err := kgo.NewClient(c.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(bg, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[record.TopicPartition]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out[record.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.At
		}
	})
	return out
}

// TestCloseReleasesACommitWaitingForASession: a commit made while no
// session has started waits for one (up to RevokeTimeout); Close ends that
// wait at once, and the commit reports every partition skipped, committing
// nothing.
func TestCloseReleasesACommitWaitingForASession(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("w", 1))
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	kf := c.Kfake()
	kf.ControlKey(int16(kmsg.JoinGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		kf.SleepControl(func() { <-release }) // no session starts
		return nil, nil, false
	})
	src := openSource(t, Config{Brokers: c.Addrs(), Topics: []string{"w"}, Group: "waiting", RevokeTimeout: hangGuard})
	tp := record.TopicPartition{Topic: "w", Partition: 0}
	committed := make(chan error, 1)
	go func() { committed <- src.Commit(bg, map[record.TopicPartition]int64{tp: 1}) }()
	select {
	case err := <-committed:
		t.Fatalf("Commit returned %v before any session started", err)
	case <-time.After(300 * time.Millisecond):
	}
	closed := make(chan error, 1)
	go func() { closed <- src.Close() }()
	select {
	case err := <-committed:
		var skip *record.CommitSkippedError
		if !errors.As(err, &skip) || !slices.Equal(skip.Partitions, []record.TopicPartition{tp}) {
			t.Fatalf("Commit after Close = %v, want %v reported skipped", err, tp)
		}
	case <-time.After(hangGuard / 3):
		t.Fatal("Close did not end the commit's wait for a session")
	}
	free()
	<-closed
	if held := committedOffsets(t, c, "waiting"); len(held) != 0 {
		t.Fatalf("a skipped commit reached Kafka: %v", held)
	}
}

// StartAt positions apply to the first assignment after Open only: a
// partition assigned again starts at the group's committed offset, whether
// this member committed it below the StartAt position or another member
// committed past it (design R10).
func TestStartAtAppliesToTheFirstAssignmentOnly(t *testing.T) {
	c := startCluster(t, embedded.WithTopic("s", 2))
	p0, p1 := record.TopicPartition{Topic: "s", Partition: 0}, record.TopicPartition{Topic: "s", Partition: 1}
	mustProduce(t, c, append(recs("s", 0, 10, "v"), recs("s", 1, 10, "v")...)...)
	cfg := func(id string) Config {
		return Config{Brokers: c.Addrs(), Topics: []string{"s"}, Group: "startat", ClientID: id, HeartbeatInterval: 100 * time.Millisecond}
	}
	colA := openAssigned(t, 2, cfg("a"), func(s *Source) { s.StartAt(map[record.TopicPartition]int64{p0: 8, p1: 8}) })
	for _, a := range colA.assigns {
		if a.Start != 8 {
			t.Fatalf("first assignment %+v, want Start 8 (StartAt)", a)
		}
	}
	if err := colA.src.Commit(bg, map[record.TopicPartition]int64{p0: 3, p1: 3}); err != nil {
		t.Fatal(err)
	}

	// B joins: each member gets one partition.
	colB := newCollector(t, openSource(t, cfg("b")))
	var stopB atomic.Bool
	waitB := background(colB, stopB.Load)
	colA.until("A's share after B joined", func() bool { return len(colA.revoked) == 2 && len(colA.assigned) == 1 })
	var ofB record.TopicPartition
	for _, tp := range []record.TopicPartition{p0, p1} {
		if _, ok := colA.assigned[tp]; !ok {
			ofB = tp
		}
	}
	// B commits past the StartAt position, then leaves: A gets both back.
	if err := colB.src.Commit(bg, map[record.TopicPartition]int64{ofB: 9}); err != nil {
		t.Fatal(err)
	}
	stopB.Store(true)
	waitB()
	if err := colB.src.Close(); err != nil {
		t.Fatal(err)
	}
	colA.until("A holding both again", func() bool { return len(colA.revoked) == 3 && len(colA.assigned) == 2 })
	for _, a := range colA.assigns[2:] {
		want := int64(3)
		if a.TopicPartition == ofB {
			want = 9
		}
		if a.Start != want {
			t.Errorf("%v assigned again at %d, want the committed %d (not the StartAt 8)", a.TopicPartition, a.Start, want)
		}
	}
	t.Logf("assignments of A: %+v", colA.assigns)
}

// The group client fetches nothing: every Fetch the cluster receives is
// one of the source's fetchers' (sessionless, SessionEpoch -1; franz-go's
// own consumer opens fetch sessions), through a rebalance, a topic a
// pattern finds while the source runs, and a partition added later.
func TestGroupClientNeverFetches(t *testing.T) {
	t.Parallel()
	c := startCluster(t, embedded.WithTopic("ev-a", 2))
	var ours, theirs atomic.Int64
	kf := c.Kfake()
	kf.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if req.(*kmsg.FetchRequest).SessionEpoch == -1 {
			ours.Add(1)
		} else {
			theirs.Add(1)
		}
		return nil, nil, false // the cluster answers as usual
	})
	for p := range int32(2) {
		mustProduce(t, c, recs("ev-a", p, 5, "a")...)
	}
	cfg := func(id string) Config {
		return Config{Brokers: c.Addrs(), TopicPatterns: []string{"ev-.*"}, Group: "nofetch", ClientID: id,
			DiscoveryInterval: testInterval, HeartbeatInterval: 100 * time.Millisecond}
	}
	colA := newCollector(t, openSource(t, cfg("a")))
	colA.until("A read ev-a", func() bool { return len(colA.assigned) == 2 && colA.caughtUp() && len(colA.values) == 2 })
	if err := c.CreateTopic(bg, "ev-b", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(bg, "ev-a", 3); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		mustProduce(t, c, recs("ev-b", p, 5, "b")...)
	}
	mustProduce(t, c, recs("ev-a", 2, 5, "a2")...)
	colA.until("A read ev-b and ev-a/2", func() bool { return len(colA.assigned) == 5 && colA.caughtUp() && len(colA.values) == 5 })
	var stopA atomic.Bool
	waitA := background(colA, stopA.Load) // as A's engine would, so the rebalance proceeds
	colB := newCollector(t, openSource(t, cfg("b")))
	colB.until("B assigned its share and read it", func() bool { return len(colB.assigned) > 0 && colB.caughtUp() })
	colB.pollFor(time.Second) // time for a fetch of the group clients' to show
	stopA.Store(true)
	waitA()
	if ours.Load() == 0 {
		t.Fatal("no fetch counted: the count shows nothing")
	}
	if n := theirs.Load(); n > 0 {
		t.Fatalf("%d fetches came from a group client (the source's own: %d)", n, ours.Load())
	}
	t.Logf("%d fetches, all the source's", ours.Load())
}

// waitOwned waits until src's group session owns n partitions (a
// rebalance's new session); it fails the test on a hang.
func waitOwned(t *testing.T, src *Source, n int) {
	t.Helper()
	owns := func() bool {
		src.group.mu.Lock()
		defer src.group.mu.Unlock()
		return len(src.group.owned) == n
	}
	for deadline := time.Now().Add(hangGuard); !owns(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hang: waiting for a session that owns %d partitions", n)
		}
	}
}
